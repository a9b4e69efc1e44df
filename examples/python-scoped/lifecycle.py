"""The bucket's lifecycle configuration (SPEC.md SC-7): the three class rules and a rule per
workspace whose own TTL is shorter than the deployment's (SL-5.3, built in retention.py), validated
before they are sent, put whole so they replace whatever the bucket had (SC-7.5). Lifecycle rules
are the backstop that keeps working when the sweeper does not (SL-1.1); the policies of part SL
never take a class rule away."""

import retention
from layout import Refused

ABORT_MULTIPART_DAYS = 7  # SC-7.1


def rules(backstop_days):
    """SC-7.1: sessions/ expires after the backstop, agents/ and workspaces/ never expire; each
    aborts unfinished multipart uploads. skills/ has no rule. The ids are this example's own."""
    abort = {"DaysAfterInitiation": ABORT_MULTIPART_DAYS}
    return [
        {"ID": "sessions-backstop", "Filter": {"Prefix": "sessions/"}, "Status": "Enabled",
         "Expiration": {"Days": backstop_days}, "AbortIncompleteMultipartUpload": abort},
        {"ID": "agents-kept", "Filter": {"Prefix": "agents/"}, "Status": "Enabled",
         "AbortIncompleteMultipartUpload": abort},
        {"ID": "workspaces-kept", "Filter": {"Prefix": "workspaces/"}, "Status": "Enabled",
         "AbortIncompleteMultipartUpload": abort},
    ]


def apply(conn, store, backstop_days, ttl_days, rule_limit):
    """PROTOCOL.md `apply_lifecycle`: build the configuration from every workspace's retention,
    validate it (SC-7.2, SL-5.2), put it whole, and remember its session backstop as the bound of
    the workspaces' TTLs (SL-5.2). The bound's row is held throughout, so no TTL is accepted
    against the backstop this replaces; a refused or failed put leaves the bound as it was."""
    with conn.transaction():
        conn.execute("SELECT session_backstop_days FROM bucket_lifecycle FOR UPDATE")
        retentions = conn.execute("SELECT ws_key, ttl_days FROM workspace_retention").fetchall()
        if isinstance(backstop_days, int) and not isinstance(backstop_days, bool):
            configuration = rules(backstop_days) + retention.workspace_rules(
                retentions, backstop_days, ttl_days, rule_limit)
        else:
            configuration = rules(backstop_days)
        validate(configuration, backstop_days, ttl_days, rule_limit)
        longest = max((ttl for _, ttl in retentions), default=None)
        if longest is not None and backstop_days <= longest:
            raise Refused("config", f"lifecycle configuration refused: the session backstop ({backstop_days} days) "
                          f"must be longer than every workspace's TTL (the longest is {longest} days)")
        store.put_lifecycle(configuration)
        conn.execute("UPDATE bucket_lifecycle SET session_backstop_days = %s", (backstop_days,))
    return {"outcome": "ok"}


def validate(configuration, backstop_days, ttl_days, rule_limit=1000):
    """SC-7.2: the configuration is checked before it is sent; a refusal is `config`."""

    def bad(why):
        raise Refused("config", f"lifecycle configuration refused: {why}")

    if len(configuration) > min(rule_limit, 1000):
        bad(f"more than {min(rule_limit, 1000):,} rules")
    ids = [rule.get("ID", "") for rule in configuration]
    if len(set(ids)) != len(ids) or any(not 1 <= len(i) <= 255 for i in ids):
        bad("rule ids must be unique and 1-255 characters")
    for rule in configuration:
        filt = rule.get("Filter", {})
        kinds = [k for k in ("Prefix", "Tag", "ObjectSizeGreaterThan", "ObjectSizeLessThan", "And") if k in filt]
        if len(kinds) != 1:
            bad(f"rule {rule['ID']} needs exactly one filter")
        if kinds == ["And"] and sum(len(v) if isinstance(v, list) else 1 for v in filt["And"].values()) < 2:
            bad(f"rule {rule['ID']}: an And filter needs at least two conditions")
        tagged = kinds == ["Tag"] or (kinds == ["And"] and "Tags" in filt["And"])
        if tagged and "AbortIncompleteMultipartUpload" in rule:
            bad(f"rule {rule['ID']}: a tag-filtered rule cannot abort multipart uploads")
        days = [rule.get("Expiration", {}).get("Days"),
                rule.get("AbortIncompleteMultipartUpload", {}).get("DaysAfterInitiation")]
        if any(d is not None and (not isinstance(d, int) or d < 1) for d in days):
            bad(f"rule {rule['ID']}: days must be whole and at least 1")
    if backstop_days <= ttl_days:
        bad(f"the session backstop ({backstop_days} days) must be longer than the idle TTL ({ttl_days} days)")
