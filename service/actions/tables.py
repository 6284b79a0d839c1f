"""The table registry's use cases: register a table, change its settings (the API's PATCH and the dashboard's
settings form), and the checks of policies and lock options they share with the policy templates."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from sqlalchemy.orm import Session

from tms.config import Settings
from tms.db import TablePolicy, TableRecord, TableRepo, hash_secret
from tms.hudi.context import HudiContext
from tms.hudi.errors import TableNotFoundError
from tms.hudi.locks import LockConfigError, parse_concurrency_options
from tms.hudi.storage.paths import is_under_roots
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.write_options import split_concurrency_options
from tms.planning.ttl import ttl_policy_refusal

from ..errors import validation_error
from ..schemas.tables import TableChanges, TableRegistration
from ..table_view import capability_report, registration_facts, registration_refusal
from .backups import BACKUP_DESTINATION, require_backup_destination


def checked_policy(settings: Settings, stored: dict[str, Any], changes: dict[str, Any]) -> TablePolicy:
    """The policy `stored` becomes with `changes`; a 422 for an option TMS cannot use or a backup destination it
    cannot write (the same check as PUT .../backup's)."""
    try:
        policy = TablePolicy.from_stored(stored).merged(changes)
    except ValidationError as exc:
        raise validation_error(exc.errors(), "body", "policies") from None
    if changes.get(BACKUP_DESTINATION):
        require_backup_destination(settings, policy.backup_destination, "policies", BACKUP_DESTINATION)
    return policy


def _require_applicable_ttl(table: HudiTable, policy: TablePolicy) -> None:
    """A TTL option the table cannot honour (a field that holds no time, no partitions) is refused, in one line."""
    refusal = ttl_policy_refusal(table, policy)
    if refusal:
        option, message = refusal
        raise validation_error([{"loc": (option,), "type": "value_error", "msg": message}], "body", "policies")


def checked_concurrency(stored: dict[str, str], changes: dict[str, Any], *, base_path: str, table_name: str
                        ) -> dict[str, str]:
    """The table's concurrency options after `changes` (a None value removes one), validated as TMS will use
    them to take the writers' lock: a provider TMS cannot share is refused with its one line."""
    for key, value in changes.items():
        if isinstance(value, dict | list):
            raise _lock_error(key, f"{key} must be a string, number or boolean")
    combined = {k: str(v) for k, v in {**stored, **changes}.items() if v is not None}
    try:
        config = parse_concurrency_options(combined, base_path=base_path, table_name=table_name)
    except LockConfigError as exc:
        raise _lock_error(next(iter(changes), "policies"), str(exc)) from None
    return dict(config.options)


def _lock_error(key: str, message: str):
    return validation_error([{"loc": (key,), "type": "value_error", "msg": message}], "body", "policies")


def _no_table_there(base_path: str, context: HudiContext) -> str:
    """Why there is no Hudi table at `base_path`: nothing is there, or something that is not a Hudi table."""
    try:
        there = context.open_storage(base_path).exists("")
    except Exception:  # noqa: BLE001 (a storage that cannot say: the plain reason)
        there = True
    if not there:
        return f"{base_path} does not exist"
    return f"{base_path} is not a Hudi table: it has no .hoodie/hoodie.properties"


def _base_path_error(message: str):
    return validation_error([{"loc": ("base_path",), "type": "value_error", "msg": message}], "body")


@dataclass(frozen=True)
class CheckedRegistration:
    """A registration found good, with what was read of the table for it (before any transaction)."""
    registration: TableRegistration
    table: HudiTable
    facts: dict[str, Any]
    policy: TablePolicy
    concurrency: dict[str, str]


def check_registration(settings: Settings, registration: TableRegistration, context: HudiContext
                       ) -> CheckedRegistration:
    """Read the table at the registration's base path (with `context`) and check what is asked of it: a 422 for
    a path outside the storage roots, no Hudi table TMS can read, a table TMS can run no service on, or an
    unusable policy."""
    roots = settings.storage_roots
    if not is_under_roots(registration.base_path, roots):
        raise _base_path_error(f"{registration.base_path} is outside the storage roots ({', '.join(roots)})")
    concurrency_changes, policy_changes = split_concurrency_options(registration.policies)
    policy = checked_policy(settings, {}, policy_changes)
    try:
        table = HudiTable.load(registration.base_path, context=context)
        facts = registration_facts(table)
        report = capability_report(table, policy=policy, planner_services=frozenset(settings.planner.services))
    except TableNotFoundError:
        raise _base_path_error(_no_table_there(registration.base_path, context)) from None
    except Exception as exc:  # unreadable, unsupported version: all bad input here
        raise _base_path_error(str(exc)) from None
    refusal = registration_refusal(report)
    if refusal:
        raise _base_path_error(refusal)
    _require_applicable_ttl(table, policy)
    concurrency = checked_concurrency({}, concurrency_changes, base_path=registration.base_path,
                                      table_name=facts["name"])
    return CheckedRegistration(registration, table, facts, policy, concurrency)


def register_table(session: Session, settings: Settings, checked: CheckedRegistration
                   ) -> tuple[TableRecord, dict[str, Any]]:
    """Register the checked table: its row and its capabilities (what the planner schedules follows the
    policies as its template completes them). ConflictError for a base path registered already."""
    body = checked.registration
    table = TableRepo(session).register(
        base_path=body.base_path, enabled=body.enabled, owner=body.owner, queue=body.queue,
        priority=body.priority if "priority" in body.model_fields_set else None,
        policies=checked.policy.explicit(), concurrency_options=checked.concurrency,
        callback_key_hash=hash_secret(body.callback_key) if body.callback_key else None, **checked.facts)
    report = capability_report(checked.table, policy=table.policy,
                               planner_services=frozenset(settings.planner.services))
    return table, report


def _own(table: TableRecord, key: str) -> dict[str, Any]:
    """The table's own policies or concurrency options (not its template's)."""
    return dict((table.own_settings or {}).get(key) or {})


def change_table(session: Session, settings: Settings, table_id: int, changes: TableChanges, context: HudiContext
                 ) -> TableRecord:
    """Apply an admin's changes to a table (the API's PATCH and the dashboard's settings form; a TTL policy is
    checked against the table read with `context`): the table as changed. A 422 for a policy or lock option that
    cannot be used; NotFoundError for an unknown table."""
    fields = changes.model_dump(exclude_unset=True)
    repo = TableRepo(session)
    table = repo.get(table_id)
    if "policies" in fields:
        concurrency_changes, policy_changes = split_concurrency_options(fields["policies"] or {})
        policy = checked_policy(settings, _own(table, "policies"), policy_changes)
        if policy.record_ttl or policy.partition_ttl:
            _require_applicable_ttl(HudiTable.load(table.base_path, context=context), policy)
        fields["policies"] = policy.explicit()
        if concurrency_changes:
            fields["concurrency_options"] = checked_concurrency(_own(table, "concurrency_options"),
                                                                concurrency_changes, base_path=table.base_path,
                                                                table_name=table.name)
    if "callback_key" in fields:
        key = fields.pop("callback_key")
        fields["callback_key_hash"] = hash_secret(key) if key else None
    return repo.update(table_id, **fields)
