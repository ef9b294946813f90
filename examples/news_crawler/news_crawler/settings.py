"""A news crawler that drops re-posted articles: Scrapy + scrapy-redis + fingerprint_indexer.

Several crawler processes share one request queue and URL dupefilter in Redis (scrapy-redis) and one
near-duplicate truth (the fingerprint_indexer sidecar), so an article re-posted on another site, or met by
two processes, is kept once. Override any setting with ``-s NAME=VALUE`` or the environment variables read
below.
"""

import os

BOT_NAME = "news_crawler"
SPIDER_MODULES = ["news_crawler.spiders"]
NEWSPIDER_MODULE = "news_crawler.spiders"
ROBOTSTXT_OBEY = True

# scrapy-redis: one queue and one "seen URLs" filter for every crawler process
SCHEDULER = "scrapy_redis.scheduler.Scheduler"
DUPEFILTER_CLASS = "scrapy_redis.dupefilter.RFPDupeFilter"
SCHEDULER_PERSIST = True  # a process that finishes first must not wipe the queue of the others
REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379")
REDIS_START_URLS_BATCH_SIZE = 1
MAX_IDLE_TIME_BEFORE_CLOSE = 10  # seconds with an empty queue before a process stops

# fingerprint_indexer: decide each article against the shared sidecar (`fingerprint-indexer serve`)
ITEM_PIPELINES = {"fingerprint_indexer.scrapy.FingerprintPipeline": 300}
FPI_SIDECAR_URL = os.environ.get("FPI_SIDECAR_URL", "http://127.0.0.1:8000")
FPI_INDEX = os.environ.get("FPI_INDEX", "news")
FPI_DROP_DUPLICATES = True  # False: keep re-posts, tagged with decision / duplicate_of / cluster_id
FPI_ID_FIELD = "url"
FPI_HTML_FIELD = "html"  # the page's HTML: site headers, menus and footers are stripped before fingerprinting

CONCURRENT_REQUESTS = 4
REQUEST_FINGERPRINTER_IMPLEMENTATION = "2.7"
TWISTED_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"
FEED_EXPORT_ENCODING = "utf-8"
