"""Who uses the dashboard: a sign-in with an API token, kept in an HttpOnly, SameSite=Strict cookie, and the
CSRF token each of the dashboard's forms carries.

The cookie holds the API token itself, checked on every request like a bearer token (so revoking the token
ends the session at once, on every service process). The CSRF token of a session is an HMAC of its API token:
any service process can check it without shared state, and a page of another site can neither read the
cookie nor compute the value. The sign-in form, which has no session yet, carries a random value that must
match a cookie set with the form (double submit)."""
from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

from fastapi import Request, Response

from ..auth import Role, role_of_token

SESSION_COOKIE = "tms_session"
SIGN_IN_CSRF_COOKIE = "tms_sign_in_csrf"
CSRF_FIELD = "csrf_token"
COOKIE_PATH = "/ui"
SESSION_SECONDS = 12 * 3600
_CSRF_KEY = b"tms-dashboard-csrf"


class SignInRequired(Exception):
    """No session, or its token is no longer valid: the dashboard sends the browser to the sign-in page."""


class Refused(Exception):
    """A request the dashboard refuses (a form without its CSRF token, a role too low): an error page."""

    def __init__(self, status_code: int, message: str):
        super().__init__(message)
        self.status_code = status_code
        self.message = message


@dataclass(frozen=True)
class DashboardUser:
    role: Role
    token: str
    csrf_token: str

    def may(self, minimum: Role) -> bool:
        return self.role.rank >= minimum.rank

    @property
    def is_operator(self) -> bool:
        return self.may(Role.OPERATOR)

    @property
    def is_admin(self) -> bool:
        return self.may(Role.ADMIN)


def csrf_token_of(api_token: str) -> str:
    return hmac.new(_CSRF_KEY, api_token.encode(), hashlib.sha256).hexdigest()


async def dashboard_user(request: Request) -> DashboardUser:
    """The signed-in user (a FastAPI dependency); SignInRequired without a valid session."""
    token = request.cookies.get(SESSION_COOKIE)
    if not token:
        raise SignInRequired()
    role = await role_of_token(request.app.state.authenticator, token)
    if role is None:
        raise SignInRequired()
    return DashboardUser(role=role, token=token, csrf_token=csrf_token_of(token))


async def role_for_sign_in(request: Request, token: str) -> Role | None:
    return await role_of_token(request.app.state.authenticator, token) if token else None


def _cookie(response: Response, request: Request, name: str, value: str, max_age: int) -> None:
    response.set_cookie(name, value, max_age=max_age, path=COOKIE_PATH, httponly=True, samesite="strict",
                        secure=request.url.scheme == "https")


def start_session(response: Response, request: Request, token: str) -> None:
    _cookie(response, request, SESSION_COOKIE, token, SESSION_SECONDS)
    response.delete_cookie(SIGN_IN_CSRF_COOKIE, path=COOKIE_PATH)


def end_session(response: Response) -> None:
    response.delete_cookie(SESSION_COOKIE, path=COOKIE_PATH)


def sign_in_csrf(request: Request) -> str:
    """The sign-in form's CSRF value: the one its cookie holds already, else a new one."""
    return request.cookies.get(SIGN_IN_CSRF_COOKIE) or secrets.token_urlsafe(24)


def remember_sign_in_csrf(response: Response, request: Request, value: str) -> None:
    _cookie(response, request, SIGN_IN_CSRF_COOKIE, value, 3600)


def check_csrf(submitted: object, expected: str | None) -> None:
    """Refuse (403) a form whose CSRF token is missing or wrong."""
    if not expected or not isinstance(submitted, str) or not hmac.compare_digest(submitted, expected):
        raise Refused(403, "This form's CSRF token is missing or wrong: reload the page and try again.")
