"""API tokens: created once and shown once; only their SHA-256 is stored."""
from __future__ import annotations

import hashlib
import secrets

from sqlalchemy import func, or_, select, update
from sqlalchemy.orm import Session

from ..errors import NotFoundError
from ..models import ROLES, ApiToken
from ..records import TokenRecord, records_of

TOKEN_PREFIX = "tms_"


def hash_secret(secret: str) -> str:
    """SHA-256 hex of a token or callback key. Enough for random secrets: nothing to brute-force."""
    return hashlib.sha256(secret.encode()).hexdigest()


def new_secret() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


class TokenRepo:
    def __init__(self, session: Session):
        self.session = session

    def create(self, role: str, name: str = "") -> tuple[TokenRecord, str]:
        """A new token for `role`: the stored row and the token itself (not recoverable later)."""
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}: expected one of {', '.join(ROLES)}")
        token = new_secret()
        row = ApiToken(name=name, role=role, token_hash=hash_secret(token))
        self.session.add(row)
        self.session.flush()
        return TokenRecord.of(row), token

    def role_of(self, token: str) -> str | None:
        """The role of a valid (not revoked, not expired) token, else None."""
        return self.session.scalar(select(ApiToken.role).where(
            ApiToken.token_hash == hash_secret(token), ApiToken.revoked_at.is_(None),
            or_(ApiToken.expires_at.is_(None), ApiToken.expires_at > func.now())))

    def list(self) -> list[TokenRecord]:
        return records_of(TokenRecord, self.session.scalars(select(ApiToken).order_by(ApiToken.id)))

    def revoke(self, token_id: int) -> None:
        stmt = (update(ApiToken).where(ApiToken.id == token_id).values(revoked_at=func.coalesce(
            ApiToken.revoked_at, func.now())).returning(ApiToken.id))
        if self.session.execute(stmt, execution_options={"synchronize_session": False}).first() is None:
            raise NotFoundError(f"no token with id {token_id}")
