#!/usr/bin/env python3
"""Static checks of docker/Dockerfile and docker/compose.yaml (this machine
has no container runtime to build them): the health checks, the etcd volume,
restart policies, start order and published ports the README promises."""
import pathlib
import unittest

import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent


class ComposeTest(unittest.TestCase):
    def setUp(self):
        self.compose = yaml.safe_load((ROOT / "docker/compose.yaml").read_text())
        self.services = self.compose["services"]

    def test_etcd_is_checked_kept_and_restarted(self):
        etcd = self.services["etcd"]
        test = etcd["healthcheck"]["test"]
        self.assertIn("etcdctl", test)
        self.assertIn("health", test)
        self.assertIn("etcd-data:/var/lib/etcd", etcd["volumes"])
        self.assertIn("etcd-data", self.compose["volumes"])
        self.assertEqual(etcd["restart"], "unless-stopped")

    def test_replicas_wait_for_a_healthy_etcd_and_publish_metrics(self):
        replicas = [s for s in self.services if s.startswith("metasrv-")]
        self.assertEqual(len(replicas), 3)
        grpc_ports, metrics_ports = set(), set()
        for name in replicas:
            r = self.services[name]
            self.assertEqual(r["depends_on"]["etcd"]["condition"], "service_healthy")
            self.assertEqual(r["restart"], "unless-stopped")
            flags = r["command"]
            self.assertIn("--store_addrs=etcd:2379", flags)
            self.assertIn(f"--server_addr={name}:3002", flags)
            self.assertIn("--metrics_addr=0.0.0.0:4000", flags)
            for mapping in r["ports"]:
                host, container = mapping.split(":")
                (grpc_ports if container == "3002" else metrics_ports).add(host)
                self.assertIn(container, ("3002", "4000"))
        self.assertEqual(grpc_ports, {"3002", "3012", "3022"})
        self.assertEqual(metrics_ports, {"4000", "4010", "4020"})


class DockerfileTest(unittest.TestCase):
    def test_health_check_uses_metasrvctl_health(self):
        text = (ROOT / "docker/Dockerfile").read_text()
        self.assertIn("COPY --from=build /build/cli/metasrvctl /usr/local/bin/metasrvctl", text)
        healthcheck = [l for l in text.splitlines() if "metasrvctl" in l and "health" in l]
        self.assertTrue(healthcheck, "no HEALTHCHECK with metasrvctl health")
        self.assertIn("HEALTHCHECK", text)
        self.assertIn("--target metasrv metasrvctl", text)


if __name__ == "__main__":
    unittest.main()
