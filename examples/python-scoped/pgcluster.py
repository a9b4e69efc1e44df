"""A throwaway PostgreSQL for the unit tests that need the real SQL (test_policies.py): the
cluster `DATABASE_URL` names, else one started from the local PostgreSQL binaries in a temporary
directory (as the harness does, dropping to the `postgres` user when run as root, since initdb
refuses root), else None, and those tests are skipped saying why. Each test gets a fresh database.
"""

import os
import shutil
import socket
import subprocess
import tempfile
import uuid

import psycopg

BIN_DIRS = ("/usr/lib/postgresql/17/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/15/bin")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    def __init__(self):
        self.base_url = os.environ.get("DATABASE_URL")
        self.dir = None
        self.bin = None
        self.why_not = None
        if self.base_url:
            return
        self.bin = next((d for d in BIN_DIRS if os.path.exists(os.path.join(d, "initdb"))), None)
        if self.bin is None:
            self.why_not = "no DATABASE_URL and no PostgreSQL binaries in " + ", ".join(BIN_DIRS)
            return
        self.dir = tempfile.mkdtemp(prefix="pyscoped-pg-")
        user = "postgres" if os.geteuid() == 0 else None
        if user:
            shutil.chown(self.dir, user, user)
        self.data, self.user, port = os.path.join(self.dir, "data"), user, _free_port()
        try:
            self._run(user, "initdb", "-D", self.data, "-U", "postgres", "--auth=trust", "-E", "UTF8",
                      "--no-sync")
            self._run(user, "pg_ctl", "-D", self.data, "-w", "-l", os.path.join(self.dir, "log"),
                      "-o", f"-h 127.0.0.1 -p {port} -k {self.dir} -c fsync=off", "start")
        except BaseException:
            self.stop()
            raise
        self.base_url = f"postgresql://postgres@127.0.0.1:{port}/postgres"

    def _run(self, user, program, *args):
        subprocess.run([os.path.join(self.bin, program), *args], user=user, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def fresh_database(self):
        """The URL of a new, empty database."""
        name = "t_" + uuid.uuid4().hex
        with psycopg.connect(self.base_url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.base_url.rsplit("/", 1)[0] + "/" + name

    def stop(self):
        if self.dir is None:
            return
        try:
            if os.path.exists(os.path.join(self.data, "postmaster.pid")):
                self._run(self.user, "pg_ctl", "-D", self.data, "-m", "immediate", "stop")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)
