"""A tiny OpenAI-compatible chat server on 127.0.0.1 for the LLM *failure* cases (garbage,
a server that sleeps past the timeout) and for deterministic replies: it answers
``/v1/chat/completions`` with whatever ``reply(body)`` returns, after ``delay_s``, and keeps
every request body it got. It stands in for an external LLM server, not for a part of kgrag:
the requests go out through litellm and the replies are parsed by the shipped code. The real
model (SmolLM2 behind llama-cpp-python) is driven in the ``llm``-marked tests."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from kgrag.config import LLMSettings


@dataclass
class ChatServer:
    reply: Callable[[dict], str]
    delay_s: float = 0.0
    requests: list[dict] = field(default_factory=list)
    url: str = ""

    def settings(self, **overrides) -> LLMSettings:
        values = dict(model="openai/stub", api_base=self.url, api_key="x", structured_output="json_object",
                      query_timeout_s=10.0)
        values.update(overrides)
        return LLMSettings(**values)


def _handler(server: ChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the http.server naming
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            server.requests.append(body)
            time.sleep(server.delay_s)
            content = server.reply(body)
            payload = json.dumps({
                "id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()), "model": "stub",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }).encode()
            try:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (the timeout test)

        def log_message(self, *args) -> None:
            pass

    return Handler


@contextmanager
def chat_server(reply: Callable[[dict], str], delay_s: float = 0.0) -> Iterator[ChatServer]:
    server = ChatServer(reply, delay_s)
    http = ThreadingHTTPServer(("127.0.0.1", 0), _handler(server))
    http.daemon_threads = True
    server.url = f"http://127.0.0.1:{http.server_address[1]}/v1"
    thread = threading.Thread(target=http.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        http.shutdown()
        http.server_close()


def schema_key(body: dict) -> str:
    """The first required key of the schema the request asked for ("passage", "questions", ...)."""
    response_format = body.get("response_format") or {}
    schema = response_format.get("schema") or response_format.get("json_schema", {}).get("schema") or {}
    return (schema.get("required") or [""])[0]
