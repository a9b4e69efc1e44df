"""Retention per workspace (SPEC.md SL-5, capability `workspace_retention`): a workspace's own idle
TTL, which the sweep measures its sessions against (sweep.py), and the lifecycle rule a shorter
one gets (lifecycle.py builds the configuration from `workspace_rules`).

The retention is the host's request, apart from the workspace's settings (SL-5.1): its own table
(`workspace_retention`, ON DELETE CASCADE from the workspace), so creating the workspace again
keeps it and deleting the workspace ends it. A TTL must stay shorter than the session backstop of
the last configuration put on the bucket (SL-5.2), which `bucket_lifecycle` remembers; both sides
lock that row, so a TTL and a configuration never pass each other's check at once.
"""

import layout
from layout import Refused

TTL_RANGE = (1, 36_500)  # SL-1.4: days
DEFAULT_BACKSTOP_DAYS = 365  # SC-7.1: the bound while no configuration has been put
CLASS_RULES = 3  # SC-7.1: sessions/, agents/, workspaces/
DEFAULT_RULE_LIMIT = 1000  # SL-5.4, the knob lifecycle_rule_limit: S3's limit


def ttl_of(body):
    """The TTL in days, or None (the deployment's again). SL-1.4: 1 to 36,500 or invalid_policy."""
    ttl = body.get("session_file_ttl_days")
    if ttl is None:
        return None
    low, high = TTL_RANGE
    if isinstance(ttl, bool) or not isinstance(ttl, int) or not low <= ttl <= high:
        raise Refused("invalid_policy", f"a workspace's TTL is {low} to {high} days, got {ttl!r}")
    return ttl


def set_workspace_retention(conn, body):
    """PROTOCOL.md `set_workspace_retention`: put the workspace's retention whole (SL-5.1). Checked
    in this order: the id (`invalid_id`), the TTL's range (`invalid_policy`), the workspace
    (`unknown_entity`), the TTL against the bucket's session backstop (`invalid_policy`, SL-5.2).
    A refusal changes nothing; the lifecycle rules follow at the next apply_lifecycle (SL-5.3)."""
    ws = layout.check_id("workspace", body.get("workspace"))
    ttl = ttl_of(body)
    with conn.transaction():
        backstop = conn.execute("SELECT session_backstop_days FROM bucket_lifecycle FOR SHARE").fetchone()[0]
        if conn.execute("SELECT 1 FROM tenant_workspaces WHERE ws_key = %s FOR KEY SHARE", (ws,)).fetchone() is None:
            raise Refused("unknown_entity", f"no workspace {ws}")
        backstop = backstop or DEFAULT_BACKSTOP_DAYS
        if ttl is not None and ttl >= backstop:
            raise Refused("invalid_policy", f"a workspace's TTL must be shorter than the bucket's session backstop "
                          f"({backstop} days), or the backstop deletes files it keeps; got {ttl}")
        if ttl is None:
            conn.execute("DELETE FROM workspace_retention WHERE ws_key = %s", (ws,))
        else:
            conn.execute("INSERT INTO workspace_retention VALUES (%s, %s) ON CONFLICT (ws_key)"
                         " DO UPDATE SET ttl_days = EXCLUDED.ttl_days", (ws, ttl))
    return {"outcome": "ok"}


def workspace_rules(retentions, backstop_days, ttl_days, rule_limit):
    """SL-5.3, SL-5.4: one rule per workspace whose TTL is shorter than the deployment's, expiring
    its TTL plus the deployment's margin (the backstop minus the deployment's TTL), the shortest
    TTLs first (ties by workspace id) while the budget lasts; the rest are swept by the sweeper
    alone. `retentions` is (workspace, TTL in days) pairs. Rule ids are this example's own."""
    margin = backstop_days - ttl_days
    shorter = sorted((ttl, ws) for ws, ttl in retentions if ttl < ttl_days)
    budget = max(0, min(rule_limit, DEFAULT_RULE_LIMIT) - CLASS_RULES)
    return [{"ID": f"workspace-{ws}", "Filter": {"Prefix": layout.workspace_sessions_prefix(ws)},
             "Status": "Enabled", "Expiration": {"Days": ttl + margin}}
            for ttl, ws in shorter[:budget]]
