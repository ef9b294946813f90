"""Follow links from the start pages (read from Redis) and turn every article page into an item."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from scrapy.http import Response
from scrapy_redis.spiders import RedisSpider


class NewsSpider(RedisSpider):
    """Start URLs come from the Redis list ``news:start_urls`` (``redis-cli lpush news:start_urls URL``)."""

    name = "news"
    redis_key = "news:start_urls"

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        if response.css("meta[name=page-type][content=article]"):
            yield {
                "url": response.url,
                "title": (response.css("title::text").get() or "").strip(),
                "html": response.text,
            }
        yield from response.follow_all(css="a[href]", callback=self.parse)
