"""Process instances (heartbeats) and named leases (the leader lease, with its epoch)."""
from __future__ import annotations

import builtins
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import any_, delete, func, literal, or_, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from ..models import Instance, Lease
from ..records import InstanceRecord, LeaseRecord, maybe_of, records_of


class InstanceRepo:
    def __init__(self, session: Session):
        self.session = session

    def heartbeat(self, instance_id: str, *, roles: list[str], host: str, pid: int, version: str,
                  info: dict[str, Any] | None = None) -> None:
        """Record that the instance is alive (registering it on its first beat)."""
        fields = {"roles": roles, "host": host, "pid": pid, "version": version, "info": info or {}}
        self.session.execute(insert(Instance).values(id=instance_id, **fields).on_conflict_do_update(
            index_elements=[Instance.id], set_={**fields, "heartbeat_at": func.now()}))

    def list(self) -> list[InstanceRecord]:
        return records_of(InstanceRecord, self.session.scalars(select(Instance).order_by(Instance.started_at),
                                         execution_options={"populate_existing": True}))

    def alive(self, role: str, within_seconds: float) -> builtins.list[InstanceRecord]:
        """Instances of `role` that beat within `within_seconds`."""
        return records_of(InstanceRecord, self.session.scalars(select(Instance).where(
            literal(role) == any_(Instance.roles),
            Instance.heartbeat_at >= func.now() - timedelta(seconds=within_seconds))
            .order_by(Instance.started_at), execution_options={"populate_existing": True}))

    def remove(self, instance_id: str) -> None:
        self.session.execute(delete(Instance).where(Instance.id == instance_id))

    def forget_silent(self, instance_id: str, seconds: float) -> bool:
        """Remove the instance's row if it has not beaten for `seconds` (an operator's word that it is gone for
        good); False if it is alive or unknown."""
        return self.session.execute(delete(Instance).where(
            Instance.id == instance_id, Instance.heartbeat_at < func.now() - timedelta(seconds=seconds))
            .returning(Instance.id)).first() is not None


class LeaseRepo:
    """A lease is held by one holder until it expires. Taking it over increments its epoch; the
    holder passes its epoch to `holds` (or to its own CAS writes) to prove it is still the leader."""

    def __init__(self, session: Session):
        self.session = session

    def acquire(self, name: str, holder: str, ttl_seconds: float) -> int | None:
        """Take the lease if it is free or expired (new epoch), or renew it if `holder` has it
        (same epoch). Returns the epoch held, or None if someone else holds it."""
        self.session.execute(insert(Lease).values(name=name).on_conflict_do_nothing())
        expires = func.now() + timedelta(seconds=ttl_seconds)
        renewed = self.session.execute(
            update(Lease).where(Lease.name == name, Lease.holder == holder, Lease.expires_at > func.now())
            .values(expires_at=expires).returning(Lease.epoch),
            execution_options={"synchronize_session": False}).scalar()
        if renewed is not None:
            return renewed
        return self.session.execute(
            update(Lease).where(Lease.name == name, or_(Lease.holder.is_(None), Lease.expires_at <= func.now()))
            .values(holder=holder, epoch=Lease.epoch + 1, expires_at=expires, acquired_at=func.now())
            .returning(Lease.epoch), execution_options={"synchronize_session": False}).scalar()

    def expires_in(self, name: str) -> float | None:
        """Seconds until the lease's current term ends (database clock; <= 0: already over), None if no one
        holds it."""
        seconds = self.session.execute(select(func.extract("epoch", Lease.expires_at - func.now()))
                                       .where(Lease.name == name, Lease.holder.is_not(None))).scalar()
        return None if seconds is None else float(seconds)

    def holds(self, name: str, holder: str, epoch: int, *, lock: bool = False) -> bool:
        """True while `holder` holds the lease at `epoch` (database clock). With `lock`, the lease row is
        share-locked until commit, so no takeover commits between this check and the caller's commit."""
        stmt = select(Lease.name).where(Lease.name == name, Lease.holder == holder, Lease.epoch == epoch,
                                        Lease.expires_at > func.now())
        if lock:
            stmt = stmt.with_for_update(read=True)
        return self.session.execute(stmt).first() is not None

    def mark_work(self, name: str, holder: str, epoch: int) -> None:
        """Record a periodic run of the lease's holder (the leader's last work, shown by the API)."""
        self.session.execute(update(Lease).where(Lease.name == name, Lease.holder == holder, Lease.epoch == epoch)
                             .values(last_work_at=func.now()), execution_options={"synchronize_session": False})

    def release(self, name: str, holder: str, epoch: int) -> None:
        # expires_at: when the lease was given up (how long no one held it is told from it: no_leader).
        self.session.execute(update(Lease).where(Lease.name == name, Lease.holder == holder, Lease.epoch == epoch)
                             .values(holder=None, expires_at=func.now()),
                             execution_options={"synchronize_session": False})

    def get(self, name: str) -> LeaseRecord | None:
        return maybe_of(LeaseRecord, self.session.get(Lease, name, populate_existing=True))

    def term(self, name: str) -> tuple[str | None, datetime, datetime]:
        """(holder, end of the current or last term, the database's now). A lease never held, or given up by an
        older version, has its term end now: a vacancy is counted from then."""
        self.session.execute(insert(Lease).values(name=name, expires_at=func.now()).on_conflict_do_nothing())
        self.session.execute(update(Lease).where(Lease.name == name, Lease.expires_at.is_(None))
                             .values(expires_at=func.now()), execution_options={"synchronize_session": False})
        holder, expires_at, now = self.session.execute(
            select(Lease.holder, Lease.expires_at, func.now()).where(Lease.name == name)).one()
        assert expires_at is not None  # set just above
        return holder, expires_at, now

    def is_live(self, lease: LeaseRecord) -> bool:
        """True while `lease` is held and its term has not ended (database clock)."""
        return bool(lease.holder is not None and lease.expires_at is not None
                    and self.session.scalar(select(lease.expires_at > func.now())))
