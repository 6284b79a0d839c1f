"""The API documentation pages, `/docs` (Swagger UI) and `/redoc` (ReDoc), with every script, stylesheet
and icon they load served by the service itself from the `fastapi-offline` package: they work without
internet access (FastAPI's defaults load them from a CDN)."""
from __future__ import annotations

from pathlib import Path

import fastapi_offline
from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS_DIR = Path(fastapi_offline.__file__).resolve().parent / "static"
ASSETS_PATH = "/static/docs"
# Nothing but the service: ReDoc's menu shows a logo from its vendor's CDN, which the browser must not fetch
# (an offline browser would wait on it; an online one would tell a third party who reads the docs).
CONTENT_SECURITY_POLICY = ("default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
                           "script-src 'self' 'unsafe-inline'; worker-src 'self' blob:; font-src 'self' data:")
_HIDE_VENDOR_LOGO = '<style>img[src^="http"] { display: none; }</style>'
# The way back to the dashboard (and to the other reference), above the documentation.
_BACK = ('<nav style="font: 14px system-ui, sans-serif; padding: 8px 20px; background: #1d2330;">'
         '<a href="{root}/ui/" style="color: #fff; text-decoration: none;">&larr; TMS dashboard</a>'
         '<span style="color: #98a2b3;"> &middot; </span>'
         '<a href="{other}" style="color: #cfd6e4; text-decoration: none;">{other_name}</a></nav>')


def _offline(page: HTMLResponse, extra_head: str = "", *, root: str, other: str, other_name: str) -> HTMLResponse:
    body = bytes(page.body).decode()
    if extra_head:
        body = body.replace("</head>", f"{extra_head}</head>", 1)
    body = body.replace("<body>", "<body>" + _BACK.format(root=root, other=root + other, other_name=other_name), 1)
    return HTMLResponse(body, headers={"Content-Security-Policy": CONTENT_SECURITY_POLICY})


def install(app: FastAPI) -> None:
    """Serve /docs, /redoc and their assets (create the app with docs_url=None and redoc_url=None)."""
    app.mount(ASSETS_PATH, StaticFiles(directory=ASSETS_DIR), name="docs-assets")
    oauth2_redirect = "/docs/oauth2-redirect"

    @app.get("/docs", include_in_schema=False)
    def swagger_ui(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return _offline(get_swagger_ui_html(
            openapi_url=root + (app.openapi_url or "/openapi.json"), title=f"{app.title} - API",
            swagger_js_url=f"{root}{ASSETS_PATH}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{ASSETS_PATH}/swagger-ui.css",
            swagger_favicon_url=f"{root}{ASSETS_PATH}/favicon.png",
            oauth2_redirect_url=root + oauth2_redirect,
            # Swagger UI would otherwise send the spec to an online validator for its badge.
            swagger_ui_parameters={"validatorUrl": None}), root=root, other="/redoc", other_name="ReDoc")

    @app.get(oauth2_redirect, include_in_schema=False)
    def swagger_ui_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.get("/redoc", include_in_schema=False)
    def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return _offline(get_redoc_html(
            openapi_url=root + (app.openapi_url or "/openapi.json"), title=f"{app.title} - API reference",
            redoc_js_url=f"{root}{ASSETS_PATH}/redoc.standalone.js",
            redoc_favicon_url=f"{root}{ASSETS_PATH}/favicon.png", with_google_fonts=False), _HIDE_VENDOR_LOGO,
            root=root, other="/docs", other_name="Swagger UI")
