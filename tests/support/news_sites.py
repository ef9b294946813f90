"""Local news "sites" on loopback: real articles, some re-posted by other sites with other templates."""

from __future__ import annotations

import html
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TEMPLATES = {
    # an original publisher: plain article pages
    "daily": ("<html><head><title>{title} - Daily News</title>"
              '<meta name="page-type" content="article"></head><body>'
              '<nav><a href="/">首页</a> | 国内 | 国际 | 财经 | 娱乐</nav>'
              "<article><h1>{title}</h1>{paragraphs}</article>"
              "<footer>Daily News 版权所有 未经授权禁止转载</footer></body></html>"),
    # a portal re-posting others' stories inside its own frame
    "portal": ("<html><head><title>【转载】{title}｜门户网</title>"
               '<meta name="page-type" content="article"></head><body>'
               '<div class="top">门户网 - 新闻频道 - 热点推荐：天气预报 股市行情 彩票开奖</div>'
               '<div class="post"><h2 class="headline">{title}</h2>'
               '<div class="meta">来源：网络 编辑：小王</div>'
               '<div class="body">{paragraphs}</div></div>'
               '<div class="related">相关阅读：更多精彩内容请关注门户网</div>'
               "<p class=\"copyright\">本文转载自其他媒体，不代表本网观点。</p></body></html>"),
    # an aggregator that trims the last paragraph
    "digest": ("<html><head><title>{title}</title>"
               '<meta name="page-type" content="article"></head><body>'
               "<header>Digest 每日精选</header><main><section><h3>{title}</h3>{paragraphs}"
               "</section></main><aside>广告位招租</aside></body></html>"),
}


@dataclass
class Site:
    """One site: path -> HTML page, and its index page linking every article."""

    name: str
    pages: dict[str, str] = field(default_factory=dict)
    url: str = ""

    def add(self, slug: str, record: dict[str, Any], trim_last: bool = False) -> str:
        paras = [p for p in record["content"].replace("\r", "").split("\n") if p.strip()]
        if trim_last and len(paras) > 3:
            paras = paras[:-1]
        body = "".join(f"<p>{html.escape(p)}</p>" for p in paras)
        page = TEMPLATES[self.name].format(title=html.escape(record.get("title") or slug), paragraphs=body)
        self.pages[f"/{slug}.html"] = page
        return f"/{slug}.html"

    def index(self) -> str:
        links = "".join(f'<li><a href="{p}">{p}</a></li>' for p in sorted(self.pages))
        return f"<html><head><title>{self.name}</title></head><body><ul>{links}</ul></body></html>"


def _handler(site: Site) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?")[0]
            if path == "/robots.txt":
                body, status = b"User-agent: *\nAllow: /\n", 200
            elif path == "/":
                body, status = site.index().encode(), 200
            elif path in site.pages:
                body, status = site.pages[path].encode(), 200
            else:
                body, status = b"not found", 404
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def serve_sites(sites: list[Site]) -> Iterator[list[Site]]:
    """Serve each site on its own loopback port (its own origin) for the block."""
    servers = []
    try:
        for site in sites:
            srv = ThreadingHTTPServer(("127.0.0.1", 0), _handler(site))
            site.url = f"http://127.0.0.1:{srv.server_address[1]}"
            threading.Thread(target=srv.serve_forever, daemon=True).start()
            servers.append(srv)
        yield sites
    finally:
        for srv in servers:
            srv.shutdown()
            srv.server_close()
