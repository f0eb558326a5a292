"""The documentation stays true: README.md is short and reaches every page under docs/; every
relative link resolves (to a file, and to a heading of it); every command shown runs as written
as far as parsing goes — `kgrag` commands against the real command's options, scripts and
benchmarks against their files, `curl` against the server's routes; every `KGRAG_*` variable is
a setting; and the generated parts (the layer diagram, the evaluation results) are what their
commands make now."""

from __future__ import annotations

import copy
import importlib.util
import re
import shlex
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import click

from kgrag.cli import main
from kgrag.config import Settings

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = REPO / "docs"
PAGES = [README, *sorted(DOCS.rglob("*.md"))]
MAX_README_LINES = 300
# Environment variables the docs may name that are not settings (config.Settings fields).
NOT_SETTINGS = {"KGRAG_CONFIG", "KGRAG_SERVER_URL", "KGRAG_API_KEY", "KGRAG_ONNX_CACHE", "KGRAG_CYPHER_DIR",
                "KGRAG_REQUIRE_LLM", "KGRAG_REQUIRE_BROWSER", "KGRAG_CHROMIUM", "KGRAG_TEST_ES_URL",
                "KGRAG_TEST_NEO4J_URL", "KGRAG_TEST_NEO4J_PASSWORD", "KGRAG_REQUIRE_NEO4J", "KGRAG_NEO4J_JAVA", "KGRAG_MAVEN"}
# Paths an installed wheel has and a checkout does not.
IN_THE_WHEEL_ONLY = {"kgrag/cypher"}
# ... and a misspelling shown as the example of what kgrag refuses (configuration.md).
SHOWN_AS_WRONG = {"KGRAG_LLM__MODELL"}
NOT_COMMAND_BLOCKS = {"json", "toml", "mermaid", "python", "yaml", "csv"}
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)\)")
ROUTE = re.compile(r"@\w+\.(get|post|delete|put|patch)\(\s*\"([^\"]+)\"")


def _rel(path: Path) -> str:
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def _split(text: str) -> tuple[str, list[tuple[str, int, list[str]]]]:
    """The page's prose (code blocks blanked, line numbers kept) and its fenced blocks:
    (language, first line number, lines)."""
    prose: list[str] = []
    blocks: list[tuple[str, int, list[str]]] = []
    current: tuple[str, int, list[str]] | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if current is None and stripped.startswith("```"):
            current = (stripped[3:].strip().lower(), number + 1, [])
            prose.append("")
        elif current is not None and stripped.startswith("```"):
            blocks.append(current)
            current = None
            prose.append("")
        elif current is not None:
            current[2].append(line)
            prose.append("")
        elif line.startswith("    ") and prose and (not prose[-1].strip() or prose[-1].startswith("    ")):
            prose.append("")  # an indented code block
        else:
            prose.append(line)
    return "\n".join(prose), blocks


def _inline_code(prose: str) -> list[str]:
    return [re.sub(r"\s+", " ", span) for span in re.findall(r"`([^`]+)`", prose)]


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"`|\*\*|\*|_(?=\w)|(?<=\w)_", "", heading.strip()).lower()
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    kept = "".join(ch for ch in text if ch in " -_" or unicodedata.category(ch)[0] in "LN")
    return kept.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    prose, _ = _split(page.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    out = set()
    for line in prose.splitlines():
        match = re.match(r"#{1,6}\s+(.*)", line)
        if match:
            slug = _slug(match.group(1))
            n = seen.get(slug, 0)
            out.add(slug if n == 0 else f"{slug}-{n}")
            seen[slug] = n + 1
    return out


def _links(page: Path) -> Iterator[str]:
    prose, _ = _split(page.read_text(encoding="utf-8"))
    prose = re.sub(r"`[^`]*`", "", prose)
    yield from LINK.findall(prose)


def _target(page: Path, link: str) -> tuple[Path, str]:
    path, _, anchor = link.partition("#")
    return ((page.parent / path).resolve() if path else page), anchor


# -- the pages and their links ------------------------------------------------------------------
def test_readme_is_a_short_guide():
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_README_LINES, f"README.md has {lines} lines; keep it under {MAX_README_LINES}: move detail to docs/"


def test_every_docs_page_is_reachable_from_the_readme():
    reached, todo = {README.resolve()}, [README]
    while todo:
        page = todo.pop()
        for link in _links(page):
            if "://" in link or link.startswith("mailto:"):
                continue
            target, _ = _target(page, link)
            if target.suffix == ".md" and target.is_file() and target not in reached:
                reached.add(target)
                todo.append(target)
    unreached = [_rel(p) for p in PAGES if p.resolve() not in reached]
    assert not unreached, f"pages no link from README.md leads to: {unreached}"


def test_every_relative_link_resolves():
    broken = []
    for page in PAGES:
        for link in _links(page):
            if "://" in link or link.startswith("mailto:"):
                continue
            target, anchor = _target(page, link)
            if not target.exists():
                broken.append(f"{_rel(page)}: {link} (no such file)")
            elif anchor and target.suffix == ".md" and anchor not in _anchors(target):
                broken.append(f"{_rel(page)}: {link} (no heading #{anchor} in {_rel(target)})")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_links_are_checked_by_a_checker_that_can_fail(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("# A title, with `code`\n\nSee [x](#a-title-with-code) and [y](#nope).\n", encoding="utf-8")
    assert _anchors(page) == {"a-title-with-code"}
    assert list(_links(page)) == ["#a-title-with-code", "#nope"]
    assert _slug("Iteration and LLM rewriting") == "iteration-and-llm-rewriting"
    assert _slug("`kgrag eval report`: tables") == "kgrag-eval-report-tables"


# -- the commands shown -------------------------------------------------------------------------
def _command_lines(page: Path) -> Iterator[tuple[int, str]]:
    """(line number, command) for each command line of the page's code blocks (continuations
    joined, comments kept for shlex to drop)."""
    _, blocks = _split(page.read_text(encoding="utf-8"))
    for language, start, lines in blocks:
        if language in NOT_COMMAND_BLOCKS:
            continue
        pending, first = "", start
        for offset, line in enumerate(lines):
            if not pending:
                first = start + offset
            if line.rstrip().endswith("\\"):
                pending += line.rstrip()[:-1] + " "
                continue
            yield first, pending + line
            pending = ""


def _words(command: str) -> list[str]:
    words = shlex.split(command, comments=True)
    while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):  # VAR=value before the command
        words = words[1:]
    return words


def _relaxed(command: click.Command) -> click.Command:
    """A copy whose file arguments are plain strings (the docs name files the reader has, not this
    checkout), every other check kept: option names, counts, choices, ranges, JSON callbacks."""
    clone = copy.copy(command)
    params = []
    for param in command.params:
        if isinstance(param.type, (click.Path, click.File)):
            param = copy.copy(param)
            param.type = click.STRING
        params.append(param)
    clone.params = params
    return clone


def _parse_kgrag(args: list[str]) -> None:
    """Parses ``kgrag ARGS`` the way the real command would, without running it."""
    command: click.Command = main
    name = "kgrag"
    while True:
        relaxed = _relaxed(command)
        if isinstance(command, click.Group):
            probe = click.Command(name, params=[*relaxed.params, click.Argument(["rest"], nargs=-1)],
                                  context_settings={"allow_interspersed_args": False})
            try:
                ctx = probe.make_context(name, list(args))
            except click.exceptions.Exit:
                return
            rest = list(ctx.params["rest"])
            if not rest:
                if not command.invoke_without_command:
                    raise click.UsageError(f"'{name}' needs a command: {sorted(command.commands)}")
                return
            sub = command.commands.get(rest[0])
            if sub is None:
                raise click.UsageError(f"no command '{rest[0]}' under '{name}'; it has {sorted(command.commands)}")
            command, name, args = sub, f"{name} {rest[0]}", rest[1:]
            continue
        try:
            relaxed.make_context(name, list(args))
        except click.exceptions.Exit:
            pass
        return


def _program(words: list[str]) -> tuple[str, list[str]] | None:
    """What a command line runs: ('kgrag', args) for the kgrag command and the scripts that wrap
    it, ('file', [path, *args]) for a repository script, ('curl', words); None otherwise."""
    if not words:
        return None
    head, args = words[0], words[1:]
    if head in ("kgrag", ".venv/bin/kgrag"):
        return "kgrag", args
    if head == "scripts/aliases":
        return "kgrag", ["aliases", *args]
    if head == "scripts/serve":
        return "kgrag", ["serve", *args]
    if head.startswith(("scripts/", "benchmarks/", ".ci/")):
        return "file", [head, *args]
    if head in ("python", ".venv/bin/python", "python3") and args and args[0].endswith(".py"):
        return "file", args
    if head == "curl":
        return "curl", args
    return None


def _routes() -> list[tuple[str, str]]:
    from kgrag.server.openapi import DOCS_URL, SPEC_URL

    found = [(m.upper(), path) for source in (REPO / "kgrag" / "server").rglob("*.py")
             for m, path in ROUTE.findall(source.read_text(encoding="utf-8"))]
    return found + [("GET", SPEC_URL), ("GET", DOCS_URL + "/")]


def _route_matcher():
    from werkzeug.routing import Map, Rule

    return Map([Rule(path, methods=[method]) for method, path in _routes()]).bind("localhost")


def _check_route(matcher, method: str, path: str) -> str | None:
    from werkzeug.exceptions import HTTPException
    from werkzeug.routing import RequestRedirect

    try:
        matcher.match(path.split("?")[0], method=method)
    except RequestRedirect:
        return None
    except HTTPException:
        return f"{method} {path}: no such route"
    return None


def _curl_problem(matcher, args: list[str]) -> str | None:
    urls = [a for a in args if a.startswith("http")]
    if not urls:
        return "curl without a URL"
    method = "POST" if {"-d", "--data", "--data-binary", "-F"} & set(args) else "GET"
    if "-X" in args:
        method = args[args.index("-X") + 1]
    path = re.sub(r"^https?://[^/]+", "", urls[0]) or "/"
    return _check_route(matcher, method, path)


def _file_problem(args: list[str]) -> str | None:
    script = REPO / args[0]
    if not script.is_file():
        return f"{args[0]}: no such file"
    source = script.read_text(encoding="utf-8")
    unknown = [a.split("=")[0] for a in args[1:] if a.startswith("--") and f'"{a.split("=")[0]}"' not in source]
    return f"{args[0]} defines no option {unknown}" if unknown else None


def _command_problems(page: Path) -> list[str]:
    matcher = _route_matcher()
    problems = []
    for number, line in _command_lines(page):
        where = f"{_rel(page)}:{number}: {line.strip()}"
        try:
            program = _program(_words(line))
        except ValueError as e:  # unbalanced quotes
            problems.append(f"{where}: {e}")
            continue
        if program is None:
            continue
        kind, args = program
        try:
            problem = (_parse_kgrag(args) if kind == "kgrag" else _curl_problem(matcher, args) if kind == "curl"
                       else _file_problem(args))
        except click.ClickException as e:
            problem = e.format_message()
        if problem:
            problems.append(f"{where}: {problem}")
    return problems


def test_every_command_shown_parses():
    problems = [p for page in PAGES for p in _command_problems(page)]
    assert not problems, "commands in the docs that would not run:\n" + "\n".join(problems)


def test_the_command_check_can_fail(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("```bash\n.venv/bin/kgrag query 'x?' --top-k 500\nkgrag eval report a.json --nope\n"
                    "kgrag ingest\nkgrag stat\nscripts/aliases list --ambiguous  # fine\n"
                    "KGRAG_X=1 .venv/bin/kgrag --data-dir d ingest docs/ \\\n  --glossary g.csv\n"
                    "curl -s http://127.0.0.1:8000/v1/nowhere\n"
                    "curl -s http://127.0.0.1:8000/v1/query -d '{}'\n"
                    ".venv/bin/python benchmarks/load.py --clients 4 --threadz 2\n```\n", encoding="utf-8")
    problems = _command_problems(page)
    assert len(problems) == 6, problems
    assert "500 is not in the range" in problems[0] and "No such option '--nope'" in problems[1]
    assert "Missing argument 'PATHS...'" in problems[2] and "no command 'stat'" in problems[3]
    assert "GET /v1/nowhere: no such route" in problems[4] and "['--threadz']" in problems[5]


def _inline_commands(page: Path) -> Iterator[str]:
    prose, _ = _split(page.read_text(encoding="utf-8"))
    for span in _inline_code(prose):
        if re.match(r"(\.venv/bin/)?kgrag \S|scripts/aliases \S", span):
            yield span


def _known_options(words: list[str]) -> tuple[str, set[str]]:
    """The command an inline span names, and every option it and its groups accept."""
    command: click.Command = main
    options = {o for p in main.params for o in (*p.opts, *p.secondary_opts)}
    name = "kgrag"
    for word in words:
        if isinstance(command, click.Group) and word in command.commands:
            command = command.commands[word]
            name += f" {word}"
            options |= {o for p in command.params for o in (*p.opts, *p.secondary_opts)}
    return name, options | {"--help"}


def test_every_option_named_inline_exists():
    problems = []
    for page in PAGES:
        for span in _inline_commands(page):
            words = span.replace("scripts/aliases", "kgrag aliases", 1).split()[1:]
            name, options = _known_options(words)
            unknown = [w.split("=")[0] for w in words if w.startswith("-") and w.split("=")[0] not in options
                       and w not in ("-", "--")]
            if unknown:
                problems.append(f"{_rel(page)}: `{span}`: '{name}' has no option {unknown}")
    assert not problems, "\n".join(problems)


def test_every_route_named_inline_exists():
    matcher = _route_matcher()
    problems = []
    for page in PAGES:
        prose, _ = _split(page.read_text(encoding="utf-8"))
        for span in _inline_code(prose):
            for method, path in re.findall(r"\b(GET|POST|DELETE|PUT|PATCH) (/\S*)", span):
                path = re.sub(r"<[^>]+>", "x", path)
                problem = _check_route(matcher, method, path)
                if problem:
                    problems.append(f"{_rel(page)}: `{span}`: {problem}")
    assert not problems, "\n".join(problems)


def _path_problems(page: Path) -> list[str]:
    """Repository paths named in inline code (`kgrag/...`, `tests/...`, `scripts/...`) that do not
    exist; a placeholder (`<kind>`, `*`) ends the part checked, whose folder must exist."""
    prose, _ = _split(page.read_text(encoding="utf-8"))
    problems = []
    for span in _inline_code(prose):
        for word in span.split():
            if not re.match(r"(kgrag|tests|scripts|benchmarks|cypher|docs|\.ci)/", word) or word in IN_THE_WHEEL_ONLY:
                continue
            cut = re.split(r"[<*{\[…]", word.rstrip(".,:;)"), maxsplit=1)
            named = cut[0] if len(cut) == 1 or cut[0].endswith("/") else cut[0].rsplit("/", 1)[0]
            if not (REPO / named).exists():
                problems.append(f"{_rel(page)}: `{span}`: {named} does not exist")
    return problems


def test_every_repository_path_named_exists():
    problems = [p for page in PAGES for p in _path_problems(page)]
    assert not problems, "\n".join(problems)


# -- settings -----------------------------------------------------------------------------------
def _setting_problem(section: str | None, name: str) -> str | None:
    fields = Settings.model_fields
    if section is None:
        return None if name.lower() in fields else "no such setting"
    if section.lower() not in fields or not hasattr(fields[section.lower()].annotation, "model_fields"):
        return f"no settings section {section.lower()}"
    if name and name.lower() not in fields[section.lower()].annotation.model_fields:  # type: ignore[union-attr]
        return f"section {section.lower()} has no field {name.lower()}"
    return None


def _variable_problems(text: str, where: str) -> list[str]:
    problems = []
    for number, line in enumerate(text.splitlines(), start=1):
        section = None
        for match in re.finditer(r"(?<![A-Za-z0-9_])(KGRAG_[A-Z0-9_]+|__[A-Z][A-Z0-9_]*)", line):
            token = match.group(1)
            if token.startswith("__"):  # `__FIELD` after a full variable of the same line
                problem = _setting_problem(section, token[2:]) if section else None
            elif token in NOT_SETTINGS or token in SHOWN_AS_WRONG:
                continue
            elif "__" in token:
                section, _, field = token[len("KGRAG_"):].partition("__")
                problem = _setting_problem(section, field)
            else:
                problem = _setting_problem(None, token[len("KGRAG_"):])
            if problem:
                problems.append(f"{where}:{number}: {token}: {problem}")
    return problems


def test_every_variable_named_is_a_setting():
    problems = [p for page in PAGES for p in _variable_problems(page.read_text(encoding="utf-8"), _rel(page))]
    assert not problems, "variables that kgrag does not read:\n" + "\n".join(problems)


def test_the_path_check_can_fail(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("`docs/<page>.md`, `kgrag/nowhere.py`, `tests/contract/`, "
                    "`kgrag/missing/<x>.txt`\n", encoding="utf-8")
    assert [p.rsplit(": ", 1)[1] for p in _path_problems(page)] == ["kgrag/nowhere.py does not exist",
                                                                     "kgrag/missing/ does not exist"]


def test_the_variable_check_can_fail():
    problems = _variable_problems("`KGRAG_LLM__MODEL_NAME`, `KGRAG_RETRIEVAL__TOP_K`, `__CANDIDATES`, `__NOPE`\n"
                                  "`KGRAG_EXTRACTION__LLM_JSON` `KGRAG_DATA_DIR` `KGRAG_SERVER_URL` `KGRAG_FOO`", "p")
    assert [p.split(": ")[1] for p in problems] == ["KGRAG_LLM__MODEL_NAME", "__NOPE", "KGRAG_EXTRACTION__LLM_JSON",
                                                     "KGRAG_FOO"]


# -- generated sections -------------------------------------------------------------------------
def _diagram_script():
    spec = importlib.util.spec_from_file_location("architecture_diagram", REPO / "scripts" / "architecture_diagram.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_layer_diagram_is_drawn_from_the_code_as_it_is():
    script = _diagram_script()
    page = (DOCS / "architecture.md").read_text(encoding="utf-8")
    assert script.section(page) == script.render(script.arrows()), (
        "docs/architecture.md's diagram is stale: run .venv/bin/python scripts/architecture_diagram.py --update")


def test_the_layer_diagram_marks_an_arrow_up():
    script = _diagram_script()
    edges = script.arrows()
    assert ("kgrag.cli", "kgrag.server") in edges and ("kgrag.server", "kgrag.cli") not in edges
    planted = dict(edges)
    planted[("kgrag.stores", "kgrag.retrieve")] = ["kgrag/stores/planted.py"]  # up
    planted[("kgrag.retrieve", "kgrag.ingest")] = ["kgrag/retrieve/planted.py"]  # a peer
    text = script.render(planted)
    assert "kgrag_stores -. breaks a rule .-> kgrag_retrieve" in text
    assert "- `stores` → `retrieve`: `kgrag/stores/planted.py`" in text
    assert "- `retrieve` → `ingest`: `kgrag/retrieve/planted.py`" in text
    assert "2 break a rule:" in text


def test_the_evaluation_results_are_what_kgrag_eval_report_makes_from_the_runs():
    from kgrag.eval.tables import load_run, render, section

    runs = sorted((DOCS / "eval" / "runs").glob("*.json"))
    assert runs, "docs/eval/runs/ holds no run summaries"
    page = (DOCS / "evaluation.md").read_text(encoding="utf-8")
    assert section(page) == render([load_run(path) for path in runs]), (
        "docs/evaluation.md's results differ from the runs: run "
        ".venv/bin/kgrag eval report docs/eval/runs/*.json --update docs/evaluation.md")
