"""Who is calling: bearer tokens with roles (viewer < operator < admin), and the HUDI-CALLBACK-KEY
that writers send. Verified tokens are cached briefly so a request costs no database look-up."""
from __future__ import annotations

import hmac
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request, Response, status
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer
from starlette.concurrency import run_in_threadpool

from tms.db import Database, TokenRepo, hash_secret

CALLBACK_KEY_HEADER = "HUDI-CALLBACK-KEY"


class Role(StrEnum):
    VIEWER = "viewer"
    OPERATOR = "operator"
    ADMIN = "admin"

    @property
    def rank(self) -> int:
        return _RANKS[self]


_RANKS = {Role.VIEWER: 1, Role.OPERATOR: 2, Role.ADMIN: 3}

bearer_scheme = HTTPBearer(auto_error=False, description="An API token (`tms tokens create --role R`)")
callback_key_scheme = APIKeyHeader(name=CALLBACK_KEY_HEADER, auto_error=False,
                                   description="TMS_CALLBACK_KEY, or the table's own callback key")


def unauthorized(detail: str) -> HTTPException:
    return HTTPException(status.HTTP_401_UNAUTHORIZED, detail, headers={"WWW-Authenticate": "Bearer"})


class Authenticator:
    """Maps a bearer token to its role: TMS_ADMIN_TOKEN, or a token stored in the database."""

    def __init__(self, database: Database, *, admin_token: str | None, cache_seconds: float):
        self.database = database
        self.admin_token = admin_token
        self.cache_seconds = cache_seconds
        self._cache: dict[str, tuple[Role, float]] = {}  # token hash -> (role, valid until)

    def known_role(self, token: str) -> Role | None:
        """The role if it is known without the database (the admin token, or cached), else None."""
        if self.admin_token and hmac.compare_digest(token.encode(), self.admin_token.encode()):
            return Role.ADMIN
        cached = self._cache.get(hash_secret(token))
        return cached[0] if cached and cached[1] > time.monotonic() else None

    def look_up(self, token: str) -> Role | None:
        """The role of a stored, valid token (None: unknown, revoked or expired); cached."""
        with self.database.transaction() as session:
            role = TokenRepo(session).role_of(token)
        digest = hash_secret(token)
        if role is None:
            self._cache.pop(digest, None)
            return None
        self._cache[digest] = (Role(role), time.monotonic() + self.cache_seconds)
        return Role(role)


def _authenticator(request: Request) -> Authenticator:
    return request.app.state.authenticator


async def role_of_token(authenticator: Authenticator, token: str) -> Role | None:
    """The role of a token (None: unknown, revoked or expired), from the cache when it can be."""
    return authenticator.known_role(token) or await run_in_threadpool(authenticator.look_up, token)


async def bearer_role(request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None,
                                                              Depends(bearer_scheme)]) -> Role | None:
    """The caller's role from `Authorization: Bearer`, None without one; 401 for an unknown token.
    Async, so authenticated requests need no worker thread unless the token must be looked up."""
    if credentials is None:
        if request.headers.get("authorization"):
            raise unauthorized("the Authorization header must be 'Bearer <token>'")
        return None
    role = await role_of_token(_authenticator(request), credentials.credentials)
    if role is None:
        raise unauthorized("unknown, revoked or expired token")
    return role


def _admit(role: Role | None, minimum: Role) -> Role:
    """`role` if it is at least `minimum`: 401 without one, 403 below."""
    if role is None:
        raise unauthorized("missing credentials: send 'Authorization: Bearer <token>'")
    if role.rank < minimum.rank:
        raise HTTPException(status.HTTP_403_FORBIDDEN,
                            f"this needs the {minimum} role; the token has the {role} role")
    return role


def require(minimum: Role):
    """A dependency admitting callers whose role is at least `minimum` (401 without a token, 403 below)."""

    async def dependency(role: Annotated[Role | None, Depends(bearer_role)]) -> Role:
        return _admit(role, minimum)

    dependency.minimum_role = minimum  # type: ignore[attr-defined]  # for AuthenticatedFirst
    return Depends(dependency)


def _minimum_role(dependant: Dependant) -> Role | None:
    """The role a route's `require()` dependency asks for, if it has one."""
    for sub in dependant.dependencies:
        minimum = getattr(sub.call, "minimum_role", None) or _minimum_role(sub)
        if minimum is not None:
            return minimum
    return None


class AuthenticatedFirst(APIRoute):
    """A route whose caller is authenticated before its body is read. FastAPI reads and decodes a JSON body
    before it solves any dependency, so an unauthenticated caller could otherwise make the service decode up
    to TMS_MAX_BODY_BYTES for nothing. The route's own dependency then admits the caller again, from the
    cache of verified tokens."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        minimum = _minimum_role(self.dependant)
        if self.body_field is None or minimum is None:
            return handler

        async def authenticated_first(request: Request) -> Response:
            _admit(await bearer_role(request, await bearer_scheme(request)), minimum)
            return await handler(request)

        return authenticated_first


@dataclass(frozen=True)
class WriterCredential:
    """What an event sender proved: either trust for every table (the service-wide callback key
    or an operator token), or a key that must match each event's table's own callback key."""

    trusted: bool
    key_hash: str | None = None

    def admits(self, table_callback_key_hash: str | None) -> bool:
        return self.trusted or (self.key_hash is not None and table_callback_key_hash is not None
                                and hmac.compare_digest(self.key_hash, table_callback_key_hash))


async def writer_credential(request: Request, role: Annotated[Role | None, Depends(bearer_role)],
                            key: Annotated[str | None, Depends(callback_key_scheme)]) -> WriterCredential:
    """Event senders authenticate with HUDI-CALLBACK-KEY (as Hudi writers do) or an operator token."""
    if role is not None:
        if role.rank < Role.OPERATOR.rank:
            raise HTTPException(status.HTTP_403_FORBIDDEN,
                                f"sending events needs the operator role; the token has the {role} role")
        return WriterCredential(trusted=True)
    if not key:
        raise unauthorized(f"missing credentials: send the {CALLBACK_KEY_HEADER} header or a bearer token")
    service_key = request.app.state.settings.service.callback_key
    if service_key is not None and hmac.compare_digest(key.encode(), service_key.get_secret_value().encode()):
        return WriterCredential(trusted=True)
    return WriterCredential(trusted=False, key_hash=hash_secret(key))


Viewer = require(Role.VIEWER)
Operator = require(Role.OPERATOR)
Admin = require(Role.ADMIN)
