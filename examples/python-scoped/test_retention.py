"""Unit tests of a workspace's retention as this example builds it (retention.py): the TTL's range
(SPEC.md SL-1.4) and the lifecycle rules a configuration gets from the workspaces' TTLs (SL-5.3,
SL-5.4). The sweep that measures sessions by them runs in test_sweeps.py on a real database.

    target/py-scoped/bin/python -m unittest discover -s examples/python-scoped
"""

import unittest

import lifecycle
import retention
from layout import Refused


def reason(call):
    try:
        call()
    except Refused as r:
        return r.reason
    return None


def expiries(rules):
    return [(rule["Filter"]["Prefix"], rule["Expiration"]["Days"]) for rule in rules]


class AWorkspaceTtlIsAWholeNumberOfDaysFromOneTo36500(unittest.TestCase):
    def test_each_value_outside_the_range_is_invalid_policy_and_null_is_the_deployments_again(self):
        for bad in (0, -7, 36501, 7.5, "7", True):
            self.assertEqual(reason(lambda: retention.ttl_of({"session_file_ttl_days": bad})), "invalid_policy", bad)
        self.assertEqual([retention.ttl_of({"session_file_ttl_days": n}) for n in (1, 36500, None)], [1, 36500, None])
        self.assertIsNone(retention.ttl_of({}))


class AWorkspaceShorterThanTheDeploymentGetsOneRule(unittest.TestCase):
    def test_its_rule_expires_its_ttl_plus_the_deployments_margin_and_one_at_or_above_it_gets_none(self):
        rules = retention.workspace_rules([("w1", 7), ("w2", 20), ("w3", 45), ("w4", 19)], 365, 20, 1000)
        self.assertEqual(expiries(rules), [("sessions/w1/", 352), ("sessions/w4/", 364)])
        self.assertEqual(len({rule["ID"] for rule in rules}), 2)
        self.assertTrue(all(rule["Status"] == "Enabled" for rule in rules))

    def test_past_the_budget_the_shortest_ttls_get_the_rules_ties_by_workspace_id(self):
        retentions = [("w1", 4), ("w2", 3), ("w3", 2), ("w4", 1), ("w0", 2)]
        self.assertEqual(expiries(retention.workspace_rules(retentions, 365, 30, 5)),
                         [("sessions/w4/", 336), ("sessions/w0/", 337)])
        # The budget is the class rules' three fewer than the limit, and S3's 1,000 caps any knob.
        self.assertEqual(retention.workspace_rules(retentions, 365, 30, 3), [])
        many = [(f"w{n:04}", 1) for n in range(1200)]
        self.assertEqual(len(retention.workspace_rules(many, 365, 30, 5000)), 997)

    def test_the_whole_configuration_stays_within_the_limit_and_validates(self):
        retentions = [(f"w{n}", 1 + n % 20) for n in range(40)]
        configuration = lifecycle.rules(365) + retention.workspace_rules(retentions, 365, 30, 10)
        self.assertEqual(len(configuration), 10)
        lifecycle.validate(configuration, 365, 30, 10)
        self.assertEqual(reason(lambda: lifecycle.validate(configuration, 365, 30, 9)), "config")


if __name__ == "__main__":
    unittest.main()
