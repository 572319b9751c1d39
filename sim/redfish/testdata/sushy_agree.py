"""Drives a lab Redfish service with sushy (the library Ironic uses).

Run with Debian's /usr/bin/python3 (python3-sushy). It reads its input as
JSON on stdin (never from its arguments: the password is in it):
  {"url", "user", "password", "ca", "uuid", "iso", "bios": {name: value}}
and writes one JSON line per check: {"check", "ok", "detail"}. The Go test
(TestSushyAgrees) counts the lines and checks the service's own state.
"""
import json
import sys

import sushy
from sushy import auth

cfg = json.load(sys.stdin)
results = []


def check(name):
    def run(fn):
        try:
            detail = fn()
            results.append({"check": name, "ok": True, "detail": str(detail)})
        except Exception as e:  # a failed check is reported, the run goes on
            results.append({"check": name, "ok": False,
                            "detail": "%s: %s" % (type(e).__name__, e)})
        print(json.dumps(results[-1]), flush=True)
    return run


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


session = auth.SessionAuth(cfg["user"], cfg["password"])
conn = sushy.Sushy(cfg["url"], verify=cfg["ca"], auth=session)
st = {}


@check("root")
def _():
    expect(conn.uuid == cfg["uuid"], "service root UUID %s" % conn.uuid)
    return conn.redfish_version


@check("systems")
def _():
    ids = list(conn.get_system_collection().members_identities)
    expect(len(ids) == 1, "systems %s" % ids)
    return ids


@check("system_get")
def _():
    st["sys"] = conn.get_system()
    expect(st["sys"].uuid == cfg["uuid"], "system UUID %s" % st["sys"].uuid)
    return st["sys"].power_state


def reset(kind, want):
    st["sys"].reset_system(kind)
    st["sys"].refresh()
    expect(st["sys"].power_state == want,
           "power %s after %s" % (st["sys"].power_state, kind))
    return st["sys"].power_state


check("power_on")(lambda: reset(sushy.ResetType.ON, sushy.PowerState.ON))
check("power_reset")(lambda: reset(sushy.ResetType.FORCE_RESTART, sushy.PowerState.ON))
check("power_off")(lambda: reset(sushy.ResetType.FORCE_OFF, sushy.PowerState.OFF))


@check("boot_override_set")
def _():
    st["sys"].set_system_boot_options(
        target=sushy.BootSource.CD,
        enabled=sushy.BootSourceOverrideEnabled.ONCE,
        mode=sushy.BootSourceOverrideMode.UEFI)
    return "cd once uefi"


@check("boot_override_read")
def _():
    st["sys"].refresh()
    b = st["sys"].boot
    expect(b.target == sushy.BootSource.CD and
           b.enabled == sushy.BootSourceOverrideEnabled.ONCE and
           b.mode == sushy.BootSourceOverrideMode.UEFI, "boot %s %s %s" % (b.target, b.enabled, b.mode))
    return b.target


@check("bios_get")
def _():
    attrs = st["sys"].bios.attributes
    for k in cfg["bios"]:
        expect(k in attrs, "no BIOS attribute %s" % k)
    return len(attrs)


@check("bios_set")
def _():
    st["sys"].bios.set_attributes(cfg["bios"])
    pend = st["sys"].bios.pending_attributes
    for k, v in cfg["bios"].items():
        expect(pend.get(k) == v, "pending %s=%r" % (k, pend.get(k)))
    return sorted(cfg["bios"])


@check("managers")
def _():
    ids = list(conn.get_manager_collection().members_identities)
    st["mgr"] = conn.get_manager()
    return ids


@check("virtual_media_list")
def _():
    media = st["mgr"].virtual_media.get_members()
    cds = [m for m in media if sushy.VirtualMediaType.CD in m.media_types]
    expect(cds, "no CD among the manager's virtual media")
    st["cd"] = cds[0]
    return st["cd"].path


@check("virtual_media_insert")
def _():
    st["cd"].insert_media(cfg["iso"])
    st["cd"].refresh()  # no task polled: the medium must show at once
    expect(st["cd"].inserted and st["cd"].image == cfg["iso"],
           "inserted %s image %s" % (st["cd"].inserted, st["cd"].image))
    return st["cd"].image


@check("virtual_media_eject")
def _():
    st["cd"].eject_media()
    st["cd"].refresh()
    expect(not st["cd"].inserted, "still inserted")
    return "ejected"


@check("sessions_list")
def _():
    ids = list(conn.get_session_service().sessions.members_identities)
    expect(session.get_session_resource_id() in ids,
           "own session %s not in %s" % (session.get_session_resource_id(), ids))
    return len(ids)


@check("session_get_own")
def _():
    s = conn.get_session(session.get_session_resource_id())
    expect(s.username == cfg["user"], "user %s" % s.username)
    return s.identity


@check("session_get_other")
def _():
    other = sushy.Sushy(cfg["url"], verify=cfg["ca"],
                        auth=auth.BasicAuth(cfg["user"], cfg["password"]))
    s = other.get_session(session.get_session_resource_id())
    return s.identity


@check("firmware_inventory")
def _():
    inv = conn.get_update_service().firmware_inventory.get_members()
    versions = {i.identity: i.version for i in inv}
    expect("BMC" in versions and "BIOS" in versions, "inventory %s" % versions)
    return versions


@check("chassis")
def _():
    ids = list(conn.get_chassis_collection().members_identities)
    ch = conn.get_chassis()
    return "%s %s" % (ids, ch.identity)


@check("session_logout")
def _():
    path = session.get_session_resource_id()
    session.close()
    return path


print(json.dumps({"summary": True, "passed": sum(r["ok"] for r in results),
                  "total": len(results)}), flush=True)
