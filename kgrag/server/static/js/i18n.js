// UI text in English and Chinese, chosen by the browser's language (navigator.languages).

const TEXT = {
  en: {
    tagline: "Answers cite the chunks they come from, or say the knowledge base does not contain the answer.",
    nav_ask: "Ask", nav_graph: "Graph explorer", nav_api: "API",
    question: "Question", placeholder: "Ask a question, e.g. What is the LCA of two nodes?",
    ask: "Ask", options: "Options", paths: "paths:", path_dense: "dense", path_bm25: "keyword", path_translated: "keyword, translated", path_graph: "graph",
    top_k: "top k", new_conversation: "New conversation",
    tr_conversation: "conversation", tr_followup: "follow-up, searched as: {text}",
    tr_standalone: "stands alone (history not used)",
    answer: "Answer", sources: "Sources", trace: "How this answer was found (trace)",
    empty_question: "Type a question first.",
    bad_top_k: "top k must be a whole number from {min} to {max}.",
    no_modes: "Choose at least one retrieval path.",
    searching: "Searching the knowledge base…", writing: "Writing the answer…",
    done: "Answered in {ms} ms.",
    unreachable: "Cannot reach the server ({detail}). Is it running?",
    http_error: "Error {status}: {message}",
    stream_broken: "The answer stream broke off: {detail}",
    no_citations: "No sources cited.",
    show_chunk: "Show full chunk", hide_chunk: "Hide full chunk",
    page: "page {page}",
    right_source: "right source",
    invalid_citations: "Removed citations to sources not given: {list}",
    unsupported: "{count} sentence(s) without support: {list}",
    fallback: "LLM unavailable, extractive answer: {reason}",
    abstained: "The knowledge base does not contain the answer.",
    fb_prompt: "Was this answer useful?",
    fb_helpful: "Helpful", fb_wrong: "Wrong", fb_missing: "Missing source",
    fb_comment: "Optional comment (what was wrong or missing?)",
    fb_send: "Send feedback", fb_sent: "Thank you: feedback stored.", fb_pick: "Pick a rating first.",
    fb_marked: "{count} source(s) marked right",
    tr_paths: "paths", tr_found: "{path}: found {count}", tr_skipped: "{path}: skipped ({reason})",
    tr_not_asked: "{path}: not asked",
    tr_linked: "linked entities", tr_described: "described in other words (graph seeds)", tr_none: "none", tr_ambiguous: "ambiguous, all used: {list}",
    tr_expansions: "alias expansions", tr_feedback: "entities of the best keyword hits",
    tr_reranker: "reranker", tr_answer: "answer", tr_timings: "timings (ms)",
    tr_hits: "retrieved chunks", tr_found_by: "found by: {list}", tr_fused: "fused #{rank}",
    tr_reranked: "reranked #{rank}", tr_graph_paths: "graph paths:", tr_open_path: "open in graph explorer",
    tr_weights: "path weights", tr_placed_page: "placed as the page of {entity}",
    tr_placed_bridge: "placed as the bridge of {entity}: page of {page}",
    tr_placed_head: "kept in the top 3 as {path}'s first hit",
    tr_placed_previous: "cited by the previous answer", tr_placed_after: "the section after the previous answer's",
    tr_placed_before: "the section before the previous answer's",
    entity_search: "Entity name or alias", entity_placeholder: "An entity by any of its names, e.g. LCA or 最近公共祖先",
    search: "Search", looking_up: "Looking up…", no_entities: "No entity has this name or alias.",
    type_name: "Type a name first.",
    aliases: "aliases", neighbours: "neighbours", hop1: "1 hop", hop2: "2 hops", via: "via {list}",
    weight: "weight {w}", mentioned_in: "mentioned in {count} chunk(s)", no_neighbours: "no neighbours",
    curated: "curated", graph_label: "Neighbourhood of {name}", graph_hint: "Click an entity to open it, a line for the chunks that connect the two.",
    edge_title: "{a} — {b}: the chunks that connect them", path_title: "Graph path that led to a hit", chunks_count: "{count} chunk(s)",
    mentions: "{count}×",
  },
  zh: {
    tagline: "回答会引用所依据的文本块；知识库里没有答案时会直接说明。",
    new_conversation: "新对话", tr_conversation: "对话",
    tr_followup: "追问，按此检索：{text}", tr_standalone: "独立问题（未使用前文）",
    nav_ask: "提问", nav_graph: "知识图谱浏览", nav_api: "API",
    question: "问题", placeholder: "输入问题，例如：最近公共祖先是什么？",
    ask: "提问", options: "选项", paths: "检索路径：", path_dense: "向量", path_bm25: "关键词", path_translated: "关键词（译文）", path_graph: "图谱",
    top_k: "返回数量",
    answer: "回答", sources: "来源", trace: "检索过程（trace）",
    empty_question: "请先输入问题。",
    bad_top_k: "返回数量须为 {min} 到 {max} 之间的整数。",
    no_modes: "请至少选择一条检索路径。",
    searching: "正在检索知识库…", writing: "正在生成回答…",
    done: "用时 {ms} 毫秒。",
    unreachable: "无法连接服务器（{detail}）。服务是否在运行？",
    http_error: "错误 {status}：{message}",
    stream_broken: "回答传输中断：{detail}",
    no_citations: "没有引用来源。",
    show_chunk: "展开全文", hide_chunk: "收起全文",
    page: "第 {page} 页",
    right_source: "正确来源",
    invalid_citations: "已删除对不存在来源的引用：{list}",
    unsupported: "{count} 句缺少依据：{list}",
    fallback: "大模型不可用，改为抽取式回答：{reason}",
    abstained: "知识库中没有答案。",
    fb_prompt: "这个回答有用吗？",
    fb_helpful: "有用", fb_wrong: "错误", fb_missing: "缺少来源",
    fb_comment: "补充说明（可选）：哪里错了，缺了什么？",
    fb_send: "提交反馈", fb_sent: "谢谢，反馈已保存。", fb_pick: "请先选择评价。",
    fb_marked: "已标记 {count} 个正确来源",
    tr_paths: "检索路径", tr_found: "{path}：找到 {count} 个", tr_skipped: "{path}：跳过（{reason}）",
    tr_not_asked: "{path}：未启用",
    tr_linked: "识别的实体", tr_described: "按描述匹配的实体（图谱起点）", tr_none: "无", tr_ambiguous: "有歧义，全部使用：{list}",
    tr_expansions: "别名扩展", tr_feedback: "关键词最佳结果中的实体",
    tr_reranker: "重排序模型", tr_answer: "回答方式", tr_timings: "耗时（毫秒）",
    tr_hits: "检索到的文本块", tr_found_by: "来自：{list}", tr_fused: "融合后第 {rank}",
    tr_reranked: "重排后第 {rank}", tr_graph_paths: "图谱路径：", tr_open_path: "在图谱中打开",
    tr_weights: "路径权重", tr_placed_page: "作为 {entity} 的页面放入",
    tr_placed_bridge: "作为 {entity} 的桥接放入：{page} 的页面",
    tr_placed_head: "作为 {path} 的第一结果保留在前 3",
    tr_placed_previous: "上一个回答引用的片段", tr_placed_after: "上一个回答所在章节的下一节",
    tr_placed_before: "上一个回答所在章节的上一节",
    entity_search: "实体名称或别名", entity_placeholder: "输入实体的任意名称，例如 LCA 或 最近公共祖先",
    search: "搜索", looking_up: "查询中…", no_entities: "没有实体使用这个名称或别名。",
    type_name: "请先输入名称。",
    aliases: "别名", neighbours: "相邻实体", hop1: "一跳", hop2: "两跳", via: "经由 {list}",
    weight: "权重 {w}", mentioned_in: "出现在 {count} 个文本块中", no_neighbours: "没有相邻实体",
    curated: "人工维护", graph_label: "{name} 的相邻实体图", graph_hint: "点击实体打开它，点击连线查看连接两者的文本块。",
    edge_title: "{a} — {b}：连接两者的文本块", path_title: "引出该结果的图谱路径", chunks_count: "{count} 个文本块",
    mentions: "{count} 次",
  },
};

function pickLanguage() {
  const wanted = navigator.languages?.length ? navigator.languages : [navigator.language || "en"];
  for (const tag of wanted) {
    const base = String(tag).toLowerCase().split("-")[0];
    if (base in TEXT) return base;
  }
  return "en";
}

export const lang = pickLanguage();

/** The UI text for ``key`` with {name} placeholders filled in. */
export function t(key, vars = {}) {
  const template = TEXT[lang][key] ?? TEXT.en[key] ?? key;
  return template.replace(/\{(\w+)\}/g, (_, name) => (vars[name] ?? ""));
}

/** Fill elements marked data-i18n (text) and data-i18n-placeholder. */
export function translatePage(root = document) {
  document.documentElement.lang = lang === "zh" ? "zh-CN" : "en";
  for (const node of root.querySelectorAll("[data-i18n]")) node.textContent = t(node.dataset.i18n);
  for (const node of root.querySelectorAll("[data-i18n-placeholder]")) node.placeholder = t(node.dataset.i18nPlaceholder);
}
