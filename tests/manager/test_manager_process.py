"""The leader's reconciliation interval: TMS_MANAGER_RECONCILE_SECONDS, and its former name still read."""
import pytest

from tms.config import Settings


@pytest.mark.parametrize("variable", ["TMS_MANAGER_RECONCILE_SECONDS", "TMS_MANAGER_RESTORE_SECONDS"])
def test_the_reconciliation_interval_is_read_by_its_name_and_its_deprecated_one(monkeypatch, variable):
    monkeypatch.delenv("TMS_CONFIG_FILE", raising=False)
    monkeypatch.setenv(variable, "7")
    assert Settings().manager_reconcile_seconds == 7
    monkeypatch.setenv(variable, "0")
    with pytest.raises(ValueError, match="manager_reconcile_seconds"):
        Settings()
