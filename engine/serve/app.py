"""The HTTP app: the API-key check, the error shape, and the two route sets.

Routes live in engine/serve/openai_routes.py and engine/serve/native_routes.py; each
handler reads the engine from `request.app.state.engine` (engine/serve/state.py).
"""

from __future__ import annotations

from fastapi import FastAPI

from engine.serve import native_routes, openai_routes
from engine.serve.auth import APIKeyMiddleware
from engine.serve.errors import install_error_handlers
from engine.serve.state import ServerState


def create_app(state: ServerState) -> FastAPI:
    app = FastAPI(
        title="specengine", version=state.version, docs_url=None, redoc_url=None, openapi_url=None
    )
    install_error_handlers(app)
    if state.args.api_key:
        app.add_middleware(APIKeyMiddleware, api_key=state.args.api_key)
    app.state.engine = state
    app.include_router(native_routes.router)
    app.include_router(openai_routes.router)
    return app
