"""The console against a broker with ACL 1.0: its requests carry the console's access key, so the
broker decides what the key may do (an admin key creates a topic, a plain one is refused)."""

from __future__ import annotations

from pathlib import Path

import httpx

from rocketpipe.client import SessionCredentials
from rocketpipe.console import start_console
from rocketpipe.testing.cluster import local_cluster
from waiting import wait_until

ACL = """\
accounts:
  - accessKey: readonly1
    secretKey: readersecret
    defaultTopicPerm: SUB
    defaultGroupPerm: SUB
  - accessKey: adminkey
    secretKey: adminsecret
    admin: true
"""


async def test_console_signs_with_its_access_key(tmp_path: Path) -> None:
    acl = tmp_path / "plain_acl.yml"
    acl.write_text(ACL, encoding="utf-8")
    async with local_cluster(tmp_path / "store", acl_enable=True, acl_file=str(acl)) as c:
        admin_console = await start_console(
            "127.0.0.1", 0, c.namesrv_addr, allow_writes=True, credentials=SessionCredentials("adminkey", "adminsecret")
        )
        reader_console = await start_console(
            "127.0.0.1",
            0,
            c.namesrv_addr,
            allow_writes=True,
            credentials=SessionCredentials("readonly1", "readersecret"),
        )
        try:
            async with httpx.AsyncClient(base_url=reader_console.url) as http:
                page = await http.get("/cluster")
                assert page.status_code == 200 and c.broker_addr in page.text
                refused = await http.post("/topics", data={"topic": "AclTopic", "queues": "2"})
                assert refused.status_code == 502 and "NoPermission" in refused.text
            async with httpx.AsyncClient(base_url=admin_console.url) as http:
                created = await http.post("/topics", data={"topic": "AclTopic", "queues": "2"})
                assert created.status_code == 303
                assert created.headers["location"] == "/topics/AclTopic?created=1"

                async def shown() -> bool:  # once the broker has registered the topic's route
                    page = await http.get("/topics/AclTopic")
                    return page.status_code == 200 and page.text.count('class="queue"') == 2

                await wait_until(shown, timeout=20, what="the new topic's page with 2 queues")
        finally:
            await admin_console.close()
            await reader_console.close()
