"""Fixtures of the execution tests: one SparkSession for the whole session
(local[2,2]: two cores, two attempts of a task), and its runner."""
from __future__ import annotations

import os
import sys
import warnings

import pytest


@pytest.fixture(scope="session")
def spark():
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
    from pyspark.sql import SparkSession
    session = (SparkSession.builder.master("local[2,2]").appName("tms-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def spark_runner(spark):
    from jobs.spark_runner import SparkRunner
    return SparkRunner(spark.sparkContext)
