#!/usr/bin/env bash
# CLI test for the systemd unit in deploy/. Usage: deploy.sh NOVASERVE_BINARY
# Runs `systemd-analyze verify` on a copy of the unit whose ExecStart points at the binary under
# test (verify insists that the binary exists), and fails on any complaint about the unit. Where
# systemd-analyze is missing or cannot run here, says so; the required keys are checked either
# way by the unit test DoctorDeployUnit.CarriesTheRequiredSettings.
source "$(dirname "$0")/lib/cli_test_lib.sh"

UNIT=$SRC/deploy/systemd/novaserve.service
[ -f "$UNIT" ] || fail "missing $UNIT"
mkdir -p "$TMP/units"
sed "s#/usr/local/bin/novaserve#$(readlink -f "$BIN")#" "$UNIT" >"$TMP/units/novaserve.service"
printf '[Service]\nExecStart=/bin/true\n' >"$TMP/units/probe.service"

if ! command -v systemd-analyze >/dev/null; then
  echo "SKIP: systemd-analyze not installed; keys checked by DoctorDeployUnit.CarriesTheRequiredSettings"
elif ! systemd-analyze verify "$TMP/units/probe.service" >/dev/null 2>&1; then
  echo "SKIP: systemd-analyze verify cannot run here; keys checked by DoctorDeployUnit.CarriesTheRequiredSettings"
else
  systemd-analyze verify "$TMP/units/novaserve.service" >"$TMP/out" 2>&1
  rc=$?
  # verify exits 0 on warnings such as unknown keys: any line naming the unit is a failure.
  if [ $rc -ne 0 ] || grep -q 'novaserve.service' "$TMP/out"; then
    fail "systemd-analyze verify: exit $rc: $(cat "$TMP/out")"
  else
    echo "ok: systemd-analyze verify accepts deploy/systemd/novaserve.service"
  fi
fi

finish
