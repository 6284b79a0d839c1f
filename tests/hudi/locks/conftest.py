import pytest
from zookeeper_server import ZookeeperServer


@pytest.fixture(scope="session")
def zookeeper(tmp_path_factory):
    """A private ZooKeeper server for the session."""
    server = ZookeeperServer(tmp_path_factory.mktemp("zookeeper"))
    yield server
    server.stop()
