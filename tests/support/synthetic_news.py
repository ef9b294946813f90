"""A small store as ``dedupe`` writes it, of generated Chinese stories (no corpus text): unrelated stories,
some re-posted as exact and edited copies, under ids holding ``/`` and spaces, with long titles.

:func:`make_store` runs the real ``dedupe`` command, so the store records its input as ``dedupe`` does.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

from support.decision_contract import edited

#: Words the generated sentences are drawn from (a story's sentences share none of its neighbours' order).
_WORD_LINES = (
    "城市 政府 今天 发布 通知 居民 地区 工作 发展 经济 企业 市场 项目 建设 管理 "
    "服务 社会 文化 教育 学校 学生 医院 健康 交通 道路 地铁 机场 航班 天气 降雨 "
    "气温 农业 粮食 生产 科技 公司 产品 研究 专家 记者 采访 报道 会议 代表 提出 "
    "意见 计划 目标 完成 增长 下降 价格 消费 投资 银行 资金 环境 保护 河流 森林 "
    "能源 电力 工厂 工人 岗位 就业 比赛 球队 球员 冠军 观众 电影 演员 导演 音乐 "
    "节目 历史 博物馆 旅游 游客 酒店 餐厅 社区 志愿者 活动 安全 检查 部门 调查 结果 "
    "数据 显示 全年 上半年 同比 网络 平台 用户 手机"
)
WORDS = tuple(w for w in _WORD_LINES.split(" ") if w)


def _sentence(rng: random.Random) -> str:
    return "".join(rng.choice(WORDS) for _ in range(rng.randint(9, 14))) + "。"


def story(rng: random.Random, n: int) -> str:
    """A story of ``n`` lines of generated sentences, numbered so no two stories share a fact pattern."""
    return "\n".join(f"{_sentence(rng)}{_sentence(rng)}" for _ in range(n))


#: (copies beyond the original) of the stories that are re-posted: the largest clusters, largest first
REPOSTED = (6, 4, 3, 2, 1)


def documents(n_stories: int = 60, seed: int = 7) -> list[dict[str, Any]]:
    """The documents in input order: originals first, then their copies (exact and edited, alternating).
    Ids look like ``site 3/2024/story 12.html``; the first story's title is long."""
    rng = random.Random(seed)
    docs: list[dict[str, Any]] = []
    texts = [story(rng, rng.randint(8, 12)) for _ in range(n_stories)]
    for i, text in enumerate(texts):
        title = f"第{i}号新闻 " + "".join(rng.choice(WORDS) for _ in range(4))
        if i == 0:
            title = "一个非常长的标题：" + "".join(WORDS[j % len(WORDS)] for j in range(60))
        docs.append({"id": f"site {i % 5}/2024/story {i}.html", "title": title, "content": text})
    for i, copies in enumerate(REPOSTED):
        for c in range(copies):
            text = texts[i] if c % 2 == 0 else edited(texts[i])
            docs.append({"id": f"repost site/{i}/copy {c}.html", "title": docs[i]["title"], "content": text})
    return docs


def make_store(folder: Path, docs: list[dict[str, Any]] | None = None
               ) -> tuple[Path, Path, list[dict[str, Any]]]:  # fmt: skip
    """(store, input file, documents): ``dedupe`` of the documents into ``folder/store``."""
    docs = documents() if docs is None else docs
    folder.mkdir(parents=True, exist_ok=True)
    inputs = folder / "news.jsonl"
    inputs.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")
    store = folder / "store"
    subprocess.run([sys.executable, "-m", "fingerprint_indexer.cli.main", "dedupe", str(inputs), "--store",
                    str(store), "--output", str(folder / "decisions.jsonl"), "--processes", "1",
                    "--threads", "1", "--copy-marks"], check=True, capture_output=True, timeout=300)
    return store, inputs, docs
