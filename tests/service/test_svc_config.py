"""Settings: defaults, TMS_* environment variables, and a TOML or YAML config file."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from pydantic import ValidationError

from tms.config import ROLE_VIEWS, SHARED_SETTINGS, ConfigError, Settings, load_settings


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    import os
    for name in list(os.environ):
        if name.startswith("TMS_"):
            monkeypatch.delenv(name)


def test_defaults():
    settings = load_settings()
    assert settings.database_url is None and settings.data_dir == Path(".tms")
    assert settings.storage_roots == [] and settings.callback_key is None and settings.admin_token is None
    assert (settings.host, settings.port, settings.log_level) == ("127.0.0.1", 8080, "INFO")
    assert (settings.max_body_bytes, settings.max_bulk_body_bytes) == (1024 * 1024, 10 * 1024 * 1024)


def test_environment(monkeypatch):
    monkeypatch.setenv("TMS_STORAGE_ROOTS", "s3://lake/warehouse, /data/hudi")
    monkeypatch.setenv("TMS_PORT", "9000")
    monkeypatch.setenv("TMS_LOG_LEVEL", "debug")
    monkeypatch.setenv("TMS_CALLBACK_KEY", "k" * 16)
    settings = load_settings()
    assert settings.storage_roots == ["s3://lake/warehouse", "/data/hudi"]
    assert (settings.port, settings.log_level) == (9000, "DEBUG")
    assert settings.callback_key.get_secret_value() == "k" * 16 and "k" * 16 not in repr(settings)


@pytest.mark.parametrize("name, text", [
    ("tms.toml", 'port = 9100\nstorage_roots = ["/a", "/b"]\nadmin_token = "from-file"\n'),
    ("tms.yaml", "port: 9100\nstorage_roots: [/a, /b]\nadmin_token: from-file\n"),
])
def test_config_file_below_environment(monkeypatch, tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    monkeypatch.setenv("TMS_CONFIG_FILE", str(path))
    settings = load_settings()
    assert (settings.port, settings.storage_roots, settings.admin_token.get_secret_value()) == (
        9100, ["/a", "/b"], "from-file")
    monkeypatch.setenv("TMS_PORT", "9200")
    assert load_settings().port == 9200


def test_bad_configuration(monkeypatch, tmp_path):
    monkeypatch.setenv("TMS_CONFIG_FILE", str(tmp_path / "missing.toml"))
    with pytest.raises(ConfigError, match="no such file"):
        load_settings()
    (tmp_path / "tms.ini").write_text("")
    monkeypatch.setenv("TMS_CONFIG_FILE", str(tmp_path / "tms.ini"))
    with pytest.raises(ConfigError, match="expected a .toml"):
        load_settings()
    monkeypatch.delenv("TMS_CONFIG_FILE")
    monkeypatch.setenv("TMS_PORT", "http")
    with pytest.raises(ConfigError, match="TMS_PORT: "):
        load_settings()


def test_retention_takes_fractions_of_a_day_and_refuses_none(monkeypatch):
    monkeypatch.setenv("TMS_RETENTION_DAYS", "0.25")
    monkeypatch.setenv("TMS_RETENTION_EVENTS_DAYS", "0.01")
    settings = load_settings()
    assert (settings.retention_days, settings.retention_events_days) == (0.25, 0.01)
    for name in ("TMS_RETENTION_DAYS", "TMS_RETENTION_EVENTS_DAYS", "TMS_HEALTH_HISTORY_DAYS"):
        monkeypatch.setenv(name, "0")
        with pytest.raises(ConfigError, match=f"{name}: "):
            load_settings()
        monkeypatch.delenv(name)


def test_hive_metastore_settings(monkeypatch):
    monkeypatch.setenv("TMS_HIVE_METASTORE_URI", "thrift://metastore:9083")
    monkeypatch.setenv("TMS_HIVE_SYNC_DATABASES", "sales, trips")
    settings = load_settings()
    assert (settings.hive_metastore_uri, settings.hive_sync_databases) == ("thrift://metastore:9083",
                                                                          ["sales", "trips"])
    monkeypatch.setenv("TMS_HIVE_METASTORE_URI", "thrift://metastore-1:9083, thrift://metastore-2:9083")
    assert load_settings().hive_metastore_uri == "thrift://metastore-1:9083, thrift://metastore-2:9083"
    for wrong in ("http://metastore:9083", "thrift://metastore:9083,http://other:9083", "thrift://metastore:9083,"):
        monkeypatch.setenv("TMS_HIVE_METASTORE_URI", wrong)
        with pytest.raises(ConfigError, match="TMS_HIVE_METASTORE_URI: "):
            load_settings()


def test_role_views_read_the_flat_settings(monkeypatch, tmp_path):
    monkeypatch.setenv("TMS_WORKER_SLOTS", "5")
    monkeypatch.setenv("TMS_MERGE_MEMORY_BYTES", str(64 * 1024 * 1024))
    monkeypatch.setenv("TMS_RETRY_MAX_ATTEMPTS", "7")
    monkeypatch.setenv("TMS_PLANNER_SERVICES", "clean, archive")
    monkeypatch.setenv("TMS_MANAGER_RESTORE_SECONDS", "90")  # the former name of TMS_MANAGER_RECONCILE_SECONDS
    monkeypatch.setenv("TMS_MONITOR_HOLD_SECONDS", "120")
    monkeypatch.setenv("TMS_GLUE_SYNC_DATABASES", "sales")
    monkeypatch.setenv("TMS_PORT", "9001")
    path = tmp_path / "tms.toml"
    path.write_text("planner_tick_seconds = 7\nmanager_lease_seconds = 12\n")
    monkeypatch.setenv("TMS_CONFIG_FILE", str(path))
    settings = load_settings(callback_key="k" * 16)
    assert (settings.worker.slots, settings.worker.merge_memory_bytes, settings.worker.retry_max_attempts) == (
        5, 64 * 1024 * 1024, 7)
    assert (settings.planner.services, settings.planner.tick_seconds) == (("clean", "archive"), 7)
    assert (settings.manager.reconcile_seconds, settings.manager.lease_seconds) == (90, 12)
    assert (settings.manager.monitor_hold_seconds, settings.manager.glue_sync_databases) == (120, ("sales",))
    assert settings.service.port == 9001 and settings.service.callback_key.get_secret_value() == "k" * 16
    # Every field of every view is its flat setting's value (lists as tuples).
    for role, view in ROLE_VIEWS.items():
        for name in view.model_fields:
            flat = getattr(settings, view.flat_name(name))
            assert getattr(getattr(settings, role), name) == (tuple(flat) if isinstance(flat, list) else flat)


def test_role_views_are_frozen_and_follow_the_flat_settings():
    settings = load_settings(worker_slots=3)
    with pytest.raises(ValidationError):
        settings.worker.slots = 4
    with pytest.raises(AttributeError, match="derived from the flat settings"):
        settings.worker = settings.worker
    copied = settings.model_copy(update={"worker_slots": 6})
    assert (copied.worker.slots, settings.worker.slots) == (6, 3)
    settings.planner_threads = 9  # a changed flat field (a test's monkeypatch) is seen by its view
    assert settings.planner.threads == 9


def test_every_setting_has_one_place():
    """Each flat setting is read through exactly one role's view or is shared (SHARED_SETTINGS): a new setting
    must be given its place. A role's prefix (worker_, planner_, manager_) puts a setting in that role's view."""
    places = Counter(SHARED_SETTINGS)
    for view in ROLE_VIEWS.values():
        for name in view.model_fields:
            flat = view.flat_name(name)
            assert flat in Settings.model_fields, f"{view.__name__}.{name}: no setting {flat}"
            places[flat] += 1
        prefixed = {f for f in Settings.model_fields if view.PREFIX and f.startswith(view.PREFIX)}
        assert prefixed <= {view.flat_name(n) for n in view.model_fields}, f"{view.__name__} lacks some"
    assert not set(Settings.model_fields) - set(places), "settings in no view and not shared"
    assert {name for name, count in places.items() if count != 1} == set(), "settings in more than one place"
    assert set(places) == set(Settings.model_fields)
