"""Chinese entity candidates from jieba part-of-speech tags, kept only when they carry meaning.

jieba tags proper nouns (nr person, ns place, nt organisation, nz other proper noun), but its
dictionary carries many common words under those tags (深度/ns, 祖先/nr, 城市/ns, 百科/nz ...),
and its HMM tags fragments of sentences as names. Kept all, many common words would tie
unrelated passages together. So a candidate is kept when:

* it is not one of the common words jieba's dictionary mis-tags (``MISTAGGED_COMMON_WORDS``,
  read off the dictionary's most frequent nr/ns/nz/nt entries — a property of jieba, not of a
  corpus);
* a person (nr) starts with a common surname (``SURNAMES``) and has 2–4 characters, or is a
  transliterated/foreign name (nrt, nrfg, or written only in ``TRANSLITERATION_CHARS``);
* it has at least two characters (one-character "names" are noise).

Precision was measured on a hand-labelled sample of candidates (docs/decisions.md, "Chinese
names").
"""

from __future__ import annotations

from collections.abc import Iterator

from kgrag.text.scripts import han_runs
from kgrag.types import CONCEPT

# jieba part-of-speech flag prefix → entity type (nr, nrfg, nrt are all person names).
JIEBA_TYPES = {"nr": "PERSON", "ns": "GPE", "nt": "ORG", "nz": CONCEPT}

# The ~200 most common Chinese surnames (single and compound); a jieba "nr" word that starts
# with none of them is a common word or a fragment (养老, 碧水, 博览).
SURNAMES = frozenset(
    "王 李 张 刘 陈 杨 黄 赵 吴 周 徐 孙 马 朱 胡 郭 何 高 林 罗 郑 梁 谢 宋 唐 许 韩 冯 邓 曹 彭 曾 肖 田 董 袁 潘 于 蒋 蔡 "
    "余 杜 叶 程 苏 魏 吕 丁 任 沈 姚 卢 姜 崔 钟 谭 陆 汪 范 金 石 廖 贾 夏 韦 付 方 白 邹 孟 熊 秦 邱 江 尹 薛 闫 段 雷 侯 龙 "
    "史 陶 黎 贺 顾 毛 郝 龚 邵 万 钱 严 覃 武 戴 莫 孔 向 汤 常 温 康 施 文 牛 樊 葛 邢 安 齐 易 乔 伍 庞 颜 倪 庄 聂 章 鲁 岳 "
    "翟 殷 詹 申 欧 耿 关 兰 焦 俞 左 柳 甘 祝 包 宁 尚 符 舒 阮 柯 纪 梅 童 凌 毕 单 季 裴 霍 涂 成 苗 谷 盛 曲 翁 冉 骆 蓝 路 "
    "游 辛 靳 管 柴 蒙 鲍 华 喻 祁 蒲 房 滕 屈 饶 解 牟 艾 尤 阳 时 穆 农 司 卓 古 吉 缪 简 车 项 连 芦 麦 褚 娄 窦 戚 岑 景 党 "
    "宫 费 卜 冷 晏 席 卫 米 柏 宗 瞿 桂 全 佟 应 臧 闵 苟 邬 边 卞 姬 师 和 仇 栾 隋 商 刁 沙 荣 巫 寇 桑 郎 甄 丛 仲 虞 敖 巩 "
    "明 佘 池 查 麻 苑 迟 邝 封 乐 钮 璩 晋 丰 国 鄢 衣 植 云 习 祖 欧阳 司马 上官 诸葛 东方 皇甫 令狐 慕容 尉迟 长孙 宇文".split()
)
_COMPOUND_SURNAMES = tuple(s for s in SURNAMES if len(s) == 2)
# Characters Chinese uses to transliterate foreign names; jieba's HMM tags such names nr
# (雅温得 Yaoundé, 瓦伦丁 Valentine), and a word written only in them is a name, not a word.
TRANSLITERATION_CHARS = frozenset(
    "阿埃艾安奥巴拜班邦贝比彼波伯布查达戴丹道德迪蒂丁东杜多厄恩法菲费芬佛弗福盖冈戈格贡古哈海汉豪赫华霍基吉加嘉杰"
    "金卡凯坎康考柯科克肯库拉莱兰朗劳勒雷里利莉丽连林琳卢鲁伦罗洛马玛迈麦曼梅门蒙米敏莫默姆穆纳娜奈南内尼妮涅宁纽"
    "诺帕潘佩彭皮普奇齐乔切丘萨塞桑森沙莎尚舍什圣施史斯松苏索塔泰坦汤唐特提图托瓦万旺威韦维温沃乌西希锡夏谢辛休"
    "雅亚扬耶伊因尤于约泽扎詹兹佐得斐卓罕茨"
)

# Common words that jieba's dictionary tags as proper nouns, taken from its most frequent
# nr/ns/nz/nt entries (and the ones seen in the precision sample).
MISTAGGED_COMMON_WORDS = frozenset(
    # nr
    "明白 武功 文明 小姐 小龙 和尚 王朝 阳光 陆军 道德 卫星 雷达 太后 荣誉 古老 汉白玉 丘陵 言语 冷笑 武林 明星 宫殿 光荣 "
    "权威 老太太 师傅 侍卫 维生素 帝王 封锁 宣言 胡同 玉米 师兄 顾问 花岗岩 王爷 智慧 贡献者 王公 白雪 高峰 齐声 祖先 "
    "文武 石英 金殿 侍郎 师哥 英勇 高潮 齐全 黄金周 立法权 洪水 顾客 公正 凤凰 辛勤 米粉 古建筑 玉石 寻思 胡子 须弥座 "
    "王府 老营 光辉 青少年 叶子 安静 祖宗 保健 谢谢 宝贝 白领 老公 皇太后 红旗 大展宏图 子孙 宝贵 向东 封建王朝 康复 "
    "鱼雷 沙滩 师范 诸如 梅花 青青 伯伯 养老 乐章 罗致 冉冉 碧水 博览 施政 夏粮 非常明显 "
    # ns
    "城市 东西 平原 外国 爱国 东北 南北 西北 西南 英雄 朝廷 太阳 江南 哥哥 东南 海洋 湖泊 大桥 高原 上市 建国 美丽 中原 "
    "山区 江湖 大街 王国 开国 共和国 城镇 京城 阿哥 庆典 南路 深度 山脉 回国 治安 大国 新鲜 古城 海峡 长度 长大 大洲 "
    "自治州 自治县 高度 宽度 温度 角度 "
    # nz
    "百科 和平 普通 抗日 英语 抗战 英文 共和 家族 论文 中文 精华 汉语 汇报 通讯 正文 中毒 金银 反革命 中轴线 大战 抗议 "
    "奇特 恒星 天文 汉字 君王 沙发 美味 珠宝 宝库 鸦片 金星 诚信 天大 大大的 汉文 力争 杉木 天皇 护卫 抗生素 抗争 "
    "二氧化碳 聊天 天鹅 新纪元 氨基酸 第二产业 文科 大奖 宝座 威信 天真 集成电路 文化路 文教 正宗 爱国主义 美貌 野战 "
    "羟基 革命家 保安 新世纪 大礼 本科生 曙光 源泉 洗礼 第三产业 曝光 摩托车 新闻网 第一夫人 党和国家 "
    # nt
    "国家机关 联合会 文理学院 高级中学 理工学院 国际化 交易所 通讯社 公安局 社会科学 天文学 音乐会 商学院 党组织 国家队 "
    "军政府 中央政府 联合政府 商业银行 安全局 音乐厅 美术馆 文工团 中南部 中西部 交战国 人民军队 人民共和国".split()
)


def _person_like(word: str, flag: str) -> bool:
    if flag in ("nrt", "nrfg"):  # transliterated / full foreign names
        return True
    if all(ch in TRANSLITERATION_CHARS for ch in word):
        return True
    if not 2 <= len(word) <= 4:
        return False
    return word[0] in SURNAMES or word.startswith(_COMPOUND_SURNAMES)


def keep_candidate(word: str, flag: str) -> str | None:
    """The entity type of jieba word ``word`` tagged ``flag`` when it is kept, else None."""
    entity_type = JIEBA_TYPES.get(flag[:2])
    if entity_type is None or len(word) < 2 or word in MISTAGGED_COMMON_WORDS:
        return None
    if entity_type == "PERSON" and not _person_like(word, flag):
        return None
    return entity_type


def chinese_entities(text: str, posseg) -> Iterator[tuple[str, str, int, int]]:
    """(surface, type, start, end) for each kept candidate in the Han runs of ``text``;
    ``posseg`` is an initialized ``jieba.posseg``."""
    for run in han_runs(text):
        pos = run.start()
        for word, flag in posseg.cut(run.group(), HMM=True):
            start, pos = pos, pos + len(word)
            entity_type = keep_candidate(word, flag)
            if entity_type:
                yield word, entity_type, start, pos
