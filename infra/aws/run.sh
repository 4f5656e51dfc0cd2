#!/bin/sh
# Lambda handler (Handler: run.sh): the Web Adapter layer (AWS_LAMBDA_EXEC_WRAPPER=/opt/bootstrap) runs this, then
# forwards each invocation as HTTP to port $AWS_LWA_PORT once /q/health/ready answers.
cd /var/task || exit 1
if [ -x ./application ]; then
  exec ./application   # native build (Runtime provided.al2023)
fi
# Fast start on small Lambda CPUs: tiered compilation stops at C1. (An AppCDS archive only loads from the folder it
# was built in, so one built on a workstation is no use under /var/task.)
exec java -XX:+TieredCompilation -XX:TieredStopAtLevel=1 -XX:MaxRAMPercentage=75 \
  -Djava.util.logging.manager=org.jboss.logmanager.LogManager -jar quarkus-run.jar
