#!/usr/bin/env bash
# The entry point of the TMS images (run under tini).
#   <tms subcommand> ...      serve, planner, worker, manager, db upgrade, tokens create ...: runs `tms ...`
#   executor                  a Spark executor pod of a job submitted to Kubernetes (spark.kubernetes.container.image
#                             is this image): Spark passes its settings in SPARK_* variables
#   driver ...                a Spark driver pod (spark-submit --deploy-mode cluster to Kubernetes)
#   spark-class | spark-submit | tms-healthcheck | tms-put-queue | python | bash | sh ...   run as given (the Spark standalone
#                             master and worker of docker-compose.yml, health checks, debugging)
set -euo pipefail

case "${1:-}" in
  executor)
    shift
    : "${SPARK_HOME:?SPARK_HOME is not set: executors run in the tms-spark image}"
    java_opts=()
    # SPARK_JAVA_OPT_0, SPARK_JAVA_OPT_1, ... in their numeric order
    while IFS= read -r name; do
      java_opts+=("${!name}")
    done < <(compgen -e | grep '^SPARK_JAVA_OPT_[0-9]*$' | sort -t_ -k4 -n || true)
    classpath="${SPARK_HOME}/jars/*"
    if [ -n "${SPARK_EXTRA_CLASSPATH:-}" ]; then classpath="${classpath}:${SPARK_EXTRA_CLASSPATH}"; fi
    exec java "${java_opts[@]}" "-Xms${SPARK_EXECUTOR_MEMORY}" "-Xmx${SPARK_EXECUTOR_MEMORY}" -cp "${classpath}" \
      org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend \
      --driver-url "${SPARK_DRIVER_URL}" --executor-id "${SPARK_EXECUTOR_ID}" --cores "${SPARK_EXECUTOR_CORES}" \
      --app-id "${SPARK_APPLICATION_ID}" --hostname "${SPARK_EXECUTOR_POD_IP}" \
      --resourceProfileId "${SPARK_RESOURCE_PROFILE_ID:-0}" --podName "${SPARK_EXECUTOR_POD_NAME:-${HOSTNAME}}"
    ;;
  driver)
    shift
    exec spark-submit --deploy-mode client --conf "spark.driver.bindAddress=${SPARK_DRIVER_BIND_ADDRESS:-0.0.0.0}" "$@"
    ;;
  spark-class|spark-submit|tms-healthcheck|tms-put-queue|python|python3|bash|sh|java)
    exec "$@"
    ;;
  *)
    exec tms "$@"
    ;;
esac
