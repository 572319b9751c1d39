"""Boots a lab machine from virtual media the way Ironic does, with sushy.

Run with Debian's /usr/bin/python3 (python3-sushy). Input on stdin (never
in the arguments: the password is in it): {"url", "user", "password",
"ca", "iso"}. It inserts the ISO in the Manager's virtual CD, sets a
one-time UEFI boot from the CD, powers the system on and prints one JSON
line: {"ok", "detail"}. The Go test checks the lab's own state.
"""
import json
import sys

import sushy
from sushy import auth

cfg = json.load(sys.stdin)
session = auth.SessionAuth(cfg["user"], cfg["password"])
try:
    conn = sushy.Sushy(cfg["url"], verify=cfg["ca"], auth=session)
    cd = [m for m in conn.get_manager().virtual_media.get_members()
          if sushy.VirtualMediaType.CD in m.media_types][0]
    cd.insert_media(cfg["iso"])
    system = conn.get_system()
    system.set_system_boot_options(
        target=sushy.BootSource.CD,
        enabled=sushy.BootSourceOverrideEnabled.ONCE,
        mode=sushy.BootSourceOverrideMode.UEFI)
    system.reset_system(sushy.ResetType.ON)
    cd.refresh()
    system.refresh()
    print(json.dumps({"ok": bool(cd.inserted), "detail": "%s %s" % (cd.path, system.power_state)}))
except Exception as e:
    print(json.dumps({"ok": False, "detail": "%s: %s" % (type(e).__name__, e)}))
finally:
    session.close()
