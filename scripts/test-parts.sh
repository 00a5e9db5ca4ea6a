#!/usr/bin/env bash
# The real parts the tests run, installed with apt where missing: OpenSSH (sshd nodes on
# loopback), Slurm and munge (a one-host cluster), fuse3 (artifacts mounted on demand),
# tmux (the terminal UI in a real terminal), chromium (the web page in a real browser),
# podman, runc and busybox-static (job images built from a tarball).
#
# Idempotent and quick when everything is there: one `command -v`/`test -x` per part,
# no apt call at all. Where a part cannot be installed, its tests skip and print why.
set -uo pipefail

# part: the Debian packages, then the files that say they are installed
parts=(
  "openssh-server openssh-client|/usr/sbin/sshd ssh-keygen ssh"
  "slurmctld slurmd slurm-client munge|/usr/sbin/slurmctld /usr/sbin/slurmd /usr/sbin/munged sbatch"
  "fuse3|fusermount3"
  "tmux|tmux"
  "chromium|chromium"
  "podman runc busybox-static|podman runc /bin/busybox"
)

present() {
  local f
  for f in "$@"; do
    case "$f" in
      /*) [ -x "$f" ] || return 1 ;;
      *) command -v "$f" >/dev/null 2>&1 || return 1 ;;
    esac
  done
}

missing=()
for part in "${parts[@]}"; do
  packages=${part%%|*}
  # shellcheck disable=SC2086 # the files are words
  present ${part#*|} || missing+=($packages)
done

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=(); else SUDO=(sudo); fi
  echo "installing the tests' real parts: ${missing[*]}"
  # Another apt on the machine holds the lock for a while: wait for it, do not fail.
  apt=("${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -qq -o DPkg::Lock::Timeout=600)
  if "${apt[@]}" update >/dev/null; then
    # One package that cannot be had (chromium on a minimal mirror) must not stop the
    # others: try them together, then one part at a time.
    if ! "${apt[@]}" install -y "${missing[@]}" >/dev/null 2>&1; then
      for part in "${parts[@]}"; do
        packages=${part%%|*}
        # shellcheck disable=SC2086
        present ${part#*|} && continue
        # shellcheck disable=SC2086
        "${apt[@]}" install -y $packages >/dev/null 2>&1 \
          || echo "could not install $packages: the tests that need it will skip and say why"
      done
    fi
  else
    echo "apt-get update failed: the tests whose parts are missing will skip and say why"
  fi
fi

# sshd's privilege-separation directory (the harness creates it too, when it may).
if [ ! -d /run/sshd ]; then
  if [ "$(id -u)" = 0 ]; then mkdir -p /run/sshd; else sudo mkdir -p /run/sshd; fi
fi
exit 0
