#!/usr/bin/env python3
"""Static checks of docker/Dockerfile and docker/compose*.yaml (this machine
has no container runtime to build them): the health checks, the etcd volume,
restart policies, start order and published ports the README promises."""
import pathlib
import unittest

import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent


# Per compose file: the store service, a word its health check must use, its
# data volume and mount point, and the replicas' backend and address flags.
COMPOSE = {
    "compose.yaml": ("etcd", "etcdctl", "etcd-data:/var/lib/etcd",
                     ["--store_addrs=etcd:2379"]),
    "compose.postgres.yaml": (
        "postgres", "pg_isready", "postgres-data:/var/lib/postgresql/data",
        ["--backend=postgres_store",
         "--store_addrs=postgresql://metasrv:metasrv-compose@postgres:5432/metasrv"]),
    "compose.mysql.yaml": (
        "mariadb", "healthcheck.sh", "mariadb-data:/var/lib/mysql",
        ["--backend=mysql_store",
         "--store_addrs=mysql://metasrv:metasrv-compose@mariadb:3306/metasrv"]),
}


class ComposeTest(unittest.TestCase):
    def load(self, name):
        compose = yaml.safe_load((ROOT / "docker" / name).read_text())
        return compose, compose["services"]

    def test_store_is_checked_kept_and_restarted(self):
        for name, (store, check, volume, _) in COMPOSE.items():
            with self.subTest(name):
                compose, services = self.load(name)
                service = services[store]
                self.assertIn(check, service["healthcheck"]["test"])
                self.assertIn(volume, service["volumes"])
                self.assertIn(volume.split(":")[0], compose["volumes"])
                self.assertEqual(service["restart"], "unless-stopped")

    def test_replicas_wait_for_a_healthy_store_and_publish_metrics(self):
        for name, (store, _, _, store_flags) in COMPOSE.items():
            with self.subTest(name):
                _, services = self.load(name)
                replicas = [s for s in services if s.startswith("metasrv-")]
                self.assertEqual(len(replicas), 3)
                grpc_ports, metrics_ports = set(), set()
                for replica in replicas:
                    r = services[replica]
                    self.assertEqual(r["depends_on"][store]["condition"], "service_healthy")
                    self.assertEqual(r["restart"], "unless-stopped")
                    flags = r["command"]
                    for flag in store_flags:
                        self.assertIn(flag, flags)
                    self.assertIn(f"--server_addr={replica}:3002", flags)
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

    def test_runtime_has_the_database_client_libraries(self):
        text = (ROOT / "docker/Dockerfile").read_text()
        for lib in ("libpq5", "libmariadb3"):
            self.assertIn(lib, text)


if __name__ == "__main__":
    unittest.main()
