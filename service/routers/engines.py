"""Engines and rollout rules: register the Sparks and job code versions tasks run on, and choose which
tasks run on which, with a canary share the manager rolls back when it fails."""
from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from fastapi import APIRouter, Path, Request, Response, status

from tms.db import AlertRepo, EngineRecord, EngineRepo, EngineResults, RolloutRecord, RolloutRepo, ShadowRunRepo
from tms.execute.engine_code import check_pyspark_version, resolve_code_path, spark_submit_of
from tms.execute.hudi_engine import check_hudi_engine

from ..auth import Admin, AuthenticatedFirst, Viewer
from ..schemas.engines import (
    EngineIn,
    EngineOut,
    EngineResultsOut,
    RolloutIn,
    RolloutOut,
    ShadowResultsOut,
    ShadowRunOut,
)
from ..schemas.problems import ADMIN, VIEWER, problems

router = APIRouter(route_class=AuthenticatedFirst, prefix="/api/v1")
Name = Annotated[str, Path(max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")]
RESULTS_WINDOW = timedelta(days=1)
CANARY_ALERT = "canary_rolled_back"


def _results(r: EngineResults | None) -> EngineResultsOut | None:
    if r is None:
        return None
    return EngineResultsOut(finished=r.finished, failed=r.failed, success_rate=r.success_rate,
                            mean_seconds=r.mean_seconds, p50_seconds=r.p50_seconds, p95_seconds=r.p95_seconds)


def _engine_out(engine: EngineRecord, results: dict[str, EngineResults]) -> EngineOut:
    out = EngineOut.model_validate(engine)
    out.results = _results(results.get(engine.name))
    return out


def _rollout_out(rollout: RolloutRecord, repo: EngineRepo) -> RolloutOut:
    out = RolloutOut.model_validate(rollout)
    out.results = {name: r for name, res in repo.results(since=rollout.since, rollout=rollout.name).items()
                   if (r := _results(res)) is not None}
    if rollout.shadow:
        shadowed = ShadowRunRepo(repo.session).results(rollout.name, since=rollout.since)
        out.shadow_results = ShadowResultsOut(finished=shadowed.finished, failed=shadowed.failed,
                                              differed=shadowed.differed)
    return out


def _day_results(repo: EngineRepo) -> dict[str, EngineResults]:
    return repo.recent_results(RESULTS_WINDOW)


@router.get("/engines", response_model=list[EngineOut], dependencies=[Viewer], tags=["engines"],
            summary="Registered engines, with their success rate and durations of the last day",
            responses=problems(*VIEWER))
def list_engines(request: Request) -> list[EngineOut]:
    with request.app.state.database.transaction() as session:
        repo = EngineRepo(session)
        results = _day_results(repo)
        return [_engine_out(e, results) for e in repo.list()]


@router.get("/engines/{name}", response_model=EngineOut, dependencies=[Viewer], tags=["engines"],
            summary="One engine, with its success rate and durations of the last day",
            responses=problems(*VIEWER, 404, 422))
def get_engine(name: Name, request: Request) -> EngineOut:
    with request.app.state.database.transaction() as session:
        repo = EngineRepo(session)
        return _engine_out(repo.get(name), _day_results(repo))


@router.put("/engines/{name}", response_model=EngineOut, dependencies=[Admin], tags=["engines"],
            summary="Register or replace an engine (its spark-submit and code must exist here)",
            responses=problems(*ADMIN, 400, 413, 422))
def put_engine(name: Name, body: EngineIn, request: Request) -> EngineOut:
    spark_submit = spark_submit_of(body.spark_home, body.spark_submit)
    check_pyspark_version(body.spark_home, body.pyspark_version)
    if body.kind == "hudi":  # Hudi's procedures run the plan: no job code of TMS's, Hudi's bundle instead
        check_hudi_engine(spark_submit, body.spark_conf)
        code_path = ""
    else:
        code_path = resolve_code_path(body.code_path, body.code_version,
                                      request.app.state.settings.service.engine_code_dir)
    with request.app.state.database.transaction() as session:
        repo = EngineRepo(session)
        engine = repo.put(name, **{**body.model_dump(), "code_path": code_path})
        return _engine_out(engine, _day_results(repo))


@router.delete("/engines/{name}", status_code=status.HTTP_204_NO_CONTENT, dependencies=[Admin], tags=["engines"],
               summary="Delete an engine no rollout uses", responses=problems(*ADMIN, 404, 409, 422))
def delete_engine(name: Name, request: Request) -> Response:
    with request.app.state.database.transaction() as session:
        EngineRepo(session).delete(name)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/rollouts", response_model=list[RolloutOut], dependencies=[Viewer], tags=["engines"],
            summary="Rollout rules, with each engine's results since the rule was put", responses=problems(*VIEWER))
def list_rollouts(request: Request) -> list[RolloutOut]:
    with request.app.state.database.transaction() as session:
        repo = EngineRepo(session)
        return [_rollout_out(r, repo) for r in RolloutRepo(session).list()]


@router.get("/rollouts/{name}", response_model=RolloutOut, dependencies=[Viewer], tags=["engines"],
            summary="One rollout rule", responses=problems(*VIEWER, 404, 422))
def get_rollout(name: Name, request: Request) -> RolloutOut:
    with request.app.state.database.transaction() as session:
        return _rollout_out(RolloutRepo(session).get(name), EngineRepo(session))


@router.get("/rollouts/{name}/shadow-runs", response_model=list[ShadowRunOut], dependencies=[Viewer],
            tags=["engines"], summary="A shadow rule's latest shadow runs, newest first",
            responses=problems(*VIEWER, 404, 422))
def list_shadow_runs(name: Name, request: Request) -> list[ShadowRunOut]:
    with request.app.state.database.transaction() as session:
        RolloutRepo(session).get(name)
        return [ShadowRunOut.model_validate(run) for run in ShadowRunRepo(session).list(rollout=name)]


@router.put("/rollouts/{name}", response_model=RolloutOut, dependencies=[Admin], tags=["engines"],
            summary="Create or replace a rollout rule; it starts (again) active, counting results from now",
            responses=problems(*ADMIN, 400, 413, 422))
def put_rollout(name: Name, body: RolloutIn, request: Request) -> RolloutOut:
    settings = request.app.state.settings
    fields = body.model_dump(exclude={"table"})
    fields["table_name"] = body.table
    if fields["failure_margin"] is None:
        fields["failure_margin"] = settings.manager.canary_failure_margin
    if fields["min_tasks"] is None:
        fields["min_tasks"] = settings.manager.canary_min_tasks
    with request.app.state.database.transaction() as session:
        rollout = RolloutRepo(session).put(name, **fields)
        AlertRepo(session).resolve(f"{CANARY_ALERT}:rollout:{name}")  # a rolled-back canary put again
        return _rollout_out(rollout, EngineRepo(session))


@router.delete("/rollouts/{name}", status_code=status.HTTP_204_NO_CONTENT, dependencies=[Admin],
               tags=["engines"], summary="Delete a rollout rule", responses=problems(*ADMIN, 404, 422))
def delete_rollout(name: Name, request: Request) -> Response:
    with request.app.state.database.transaction() as session:
        RolloutRepo(session).delete(name)
        AlertRepo(session).resolve(f"{CANARY_ALERT}:rollout:{name}")
    return Response(status_code=status.HTTP_204_NO_CONTENT)
