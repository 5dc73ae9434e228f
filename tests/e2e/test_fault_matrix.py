"""The fault matrix's CI subset (tests/faults/run.py --quick): faults injected
under a verifying workload, every acknowledged write read back byte for
byte afterwards."""
import os
import subprocess

import pytest

RUN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "faults", "run.py")


@pytest.mark.timeout_s(960)  # beyond run.py's own 900 s limit below
def test_fault_matrix_quick():
    r = subprocess.run(["/usr/bin/python3", RUN, "--quick"], capture_output=True, text=True, timeout=900)
    print(r.stdout)
    last = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
    assert r.returncode == 0, r.stdout + r.stderr
    assert last.endswith("bytes wrong 0, acknowledged writes lost 0"), last
