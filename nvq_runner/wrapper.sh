#!/bin/sh
# nvq job wrapper: runs "$1/script" with bash and records how it ended in "$1/exit".
# Given more words ($3...), it runs those instead: a script that was only
# `exec PROGRAM ARGS` (nvq_runner/script_exec.py), without a bash started to exec it.
#
# The runner starts this as the leader of a new session, so every process of the job
# shares a session id equal to this shell's pid: that is how GPU processes are mapped
# to jobs, and how the whole job is signalled as one process group.
#
# TERM/INT/HUP, and the signals a job may ask for ahead of its end (--signal:
# QUIT/USR1/USR2/ALRM), get a do-nothing handler rather than being ignored: ignored signals
# would be inherited by the job (it could not be stopped), handled ones are reset to
# the default for it. The shell runs the handler only after the foreground child
# ends, so a group-wide SIGTERM ends the job and the wrapper still records the status.
# The record is one short write by the shell itself (no mv: forking a process here
# would sit on the path from a job's exit to the next job's start), so "exit" is
# whole, empty or absent, and the runner reads an empty one as absent. It outlives
# the runner, which reads it when it adopts a job after a restart.
# The runner starts this with umask 077 (its own files are private) and passes the
# umask the job should have as $2.
d=$1
echo $$ > "$d/wrapper.pid"
trap ':' TERM INT HUP QUIT USR1 USR2 ALRM
[ -n "$2" ] && umask "$2"
if [ $# -gt 2 ]; then
  shift 2
  "$@"
else
  bash "$d/script"
fi
rc=$?
umask 077
echo "$rc" > "$d/exit"
exit "$rc"
