"""A small RAG service to audit: FastAPI over the engine's pipeline (Chroma, MiniLM, a local GGUF model).

It stands for "the RAG service your team runs": a JSON API that answers questions from a private knowledge
base and reports its sources, an OpenAI-compatible chat endpoint with the same retrieval behind it, and a
document API (add, read, delete) — the surface an audit needs to test poisoning and to clean up after it.

    .venv/bin/python examples/rag_service.py --port 8765                       # the extraction demo's system
    .venv/bin/python examples/rag_service.py --port 8765 --defenses intent-block
    RAG_SERVICE_KEY=s3cret .venv/bin/python examples/rag_service.py --port 8765 --api-key-env RAG_SERVICE_KEY

Endpoints (JSON):

* ``POST /query`` ``{"question": "...", "session": "..."}`` → ``{"answer": "...", "sources": [{"id", "text",
  "score"}], "session": "..."}``
* ``POST /v1/chat/completions`` — OpenAI-shaped (the last user message is the question); the response adds
  ``sources``
* ``POST /documents`` ``{"id", "text", "metadata"}`` → ``{"id"}``; ``GET /documents/{id}`` (404 once gone);
  ``DELETE /documents/{id}``
* ``GET /health``

With ``--api-key-env NAME`` every request must carry ``Authorization: Bearer <the value of NAME>`` (401
otherwise). Generation is one request at a time (llama.cpp is not re-entrant); requests queue.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def build_app(
    preset: str = "quick-extraction-demo",
    defenses: tuple[str, ...] | None = None,
    api_key: str | None = None,
    data_dir: str | None = None,
) -> Any:
    """The FastAPI app serving ``preset``'s RAG system (``defenses`` replace the preset's when given)."""
    from fastapi import FastAPI, HTTPException, Request
    from fastapi.responses import JSONResponse

    from engine.targets import make_target
    from engine.types import Document

    params: dict[str, Any] = {"preset": preset}
    if defenses is not None:
        params["defenses"] = ",".join(defenses) or "none"
    target = make_target("pipeline", params, data_dir=data_dir)
    target.open()
    lock = threading.Lock()
    app = FastAPI(title="Example RAG service")

    @app.middleware("http")
    async def check_key(request: Request, call_next):
        if api_key and request.url.path != "/health":
            if request.headers.get("authorization", "") != f"Bearer {api_key}":
                return JSONResponse({"error": "invalid or missing API key"}, status_code=401)
        return await call_next(request)

    def ask(question: str) -> tuple[str, list[dict]]:
        with lock:
            reply = target.query(question)
        return reply.answer, [{"id": s.id, "text": s.text, "score": s.score} for s in reply.contexts]

    @app.get("/health")
    def health() -> dict:
        return {"status": "ok", "preset": preset, "defenses": [d.name for d in target.system.defenses]}

    @app.post("/query")
    def query(body: dict) -> dict:
        question = body.get("question")
        if not isinstance(question, str) or not question.strip():
            raise HTTPException(400, "give a non-empty 'question'")
        answer, sources = ask(question)
        return {"answer": answer, "sources": sources, "session": body.get("session") or ""}

    @app.post("/v1/chat/completions")
    def chat(body: dict) -> dict:
        msgs = [m for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "user"]
        if not msgs or not isinstance(msgs[-1].get("content"), str):
            raise HTTPException(400, "messages: give at least one user message with text content")
        t0 = time.time()
        answer, sources = ask(msgs[-1]["content"])
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
            "object": "chat.completion",
            "created": int(t0),
            "model": body.get("model") or "rag",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}],
            "usage": {
                "prompt_tokens": 0,
                "completion_tokens": len(answer.split()),
                "total_tokens": len(answer.split()),
            },
            "sources": sources,
        }

    @app.post("/documents")
    def add_document(body: dict) -> dict:
        text = body.get("text")
        if not isinstance(text, str) or not text.strip():
            raise HTTPException(400, "give a non-empty 'text'")
        doc_id = str(body.get("id") or f"doc-{uuid.uuid4().hex[:12]}")
        meta = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
        with lock:
            if target.exists([doc_id])[0]:
                raise HTTPException(409, f"document {doc_id} exists")
            target.ingest([Document(doc_id, text, meta)])
        return {"id": doc_id}

    @app.get("/documents/{doc_id}")
    def get_document(doc_id: str) -> dict:
        with lock:
            if not target.exists([doc_id])[0] and doc_id not in {d.id for d in target.system.corpus.documents}:
                raise HTTPException(404, f"no document {doc_id}")
            return {"id": doc_id, "text": target.system.store.text_of(doc_id)}

    @app.delete("/documents/{doc_id}")
    def delete_document(doc_id: str) -> dict:
        with lock:
            present = target.exists([doc_id])[0]
            target.remove([doc_id])
        if not present:
            raise HTTPException(404, f"no added document {doc_id}")
        return {"deleted": doc_id}

    app.state.target = target
    return app


def main(argv: list[str] | None = None) -> None:
    import uvicorn

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--preset", default="quick-extraction-demo", help="an extraction preset (its RAG system)")
    ap.add_argument("--defenses", default=None, help="comma-separated defenses instead of the preset's ('none': off)")
    ap.add_argument("--api-key-env", default="", help="require 'Authorization: Bearer $NAME' on every request")
    ap.add_argument("--data-dir", default=os.environ.get("RAG_PLAYGROUND_DATA_DIR"))
    a = ap.parse_args(argv)
    defenses = (
        None
        if a.defenses is None
        else tuple(d.strip() for d in a.defenses.split(",") if d.strip() and d.strip() != "none")
    )
    key = os.environ.get(a.api_key_env) if a.api_key_env else None
    if a.api_key_env and not key:
        sys.exit(f"error: --api-key-env {a.api_key_env}: the variable is not set")
    app = build_app(a.preset, defenses, key, a.data_dir)
    print(
        f"serving {a.preset} (defenses: {', '.join(defenses or ()) or 'preset default'}) on http://{a.host}:{a.port}",
        file=sys.stderr,
        flush=True,
    )
    uvicorn.run(app, host=a.host, port=a.port, log_level="warning")


if __name__ == "__main__":
    main()
