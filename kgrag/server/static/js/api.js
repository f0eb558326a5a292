// Talking to the HTTP API: JSON calls and the server-sent-event stream of /v1/query.
// Every failure becomes an ApiError: status 0 when the server cannot be reached.

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

async function send(url, options) {
  let response;
  try {
    response = await fetch(url, options);
  } catch (err) {
    throw new ApiError(0, "unreachable", err?.message || String(err));
  }
  if (!response.ok) throw await errorOf(response);
  return response;
}

async function errorOf(response) {
  let code = "http_error";
  let message = response.statusText || "request failed";
  try {
    const body = await response.json();
    if (body?.error) ({code, message} = body.error);
  } catch { /* not JSON: keep the status text */ }
  return new ApiError(response.status, code, message);
}

export async function getJson(url) {
  return (await send(url, {headers: {Accept: "application/json"}})).json();
}

export async function postJson(url, body) {
  const response = await send(url, {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)});
  return response.json();
}

/**
 * POST /v1/query with "stream": true and call handlers.retrieval(data), handlers.token(text),
 * handlers.answer(answer) as the events arrive.
 */
export async function streamQuery(request, handlers) {
  const response = await send("/v1/query", {
    method: "POST",
    headers: {"Content-Type": "application/json", Accept: "text/event-stream"},
    body: JSON.stringify({...request, stream: true}),
  });
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let sawAnswer = false;
  try {
    for (;;) {
      const {value, done} = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, {stream: true});
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const event = parseEvent(buffer.slice(0, cut));
        buffer = buffer.slice(cut + 2);
        if (!event) continue;
        if (event.name === "retrieval") handlers.retrieval?.(event.data);
        else if (event.name === "token") handlers.token?.(event.data.text ?? "");
        else if (event.name === "answer") { sawAnswer = true; handlers.answer?.(event.data.answer); }
      }
    }
  } catch (err) {
    throw new ApiError(0, "stream_broken", err?.message || String(err));
  }
  if (!sawAnswer) throw new ApiError(0, "stream_broken", "the stream ended before the answer");
}

function parseEvent(block) {
  let name = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (line.startsWith("event:")) name = line.slice(6).trim();
    else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
  }
  if (!data.length) return null;
  return {name, data: JSON.parse(data.join("\n"))};
}
