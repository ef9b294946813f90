"""The decision contract every record store must meet (embedded LevelDB store, Elasticsearch index).

Each case takes ``open_store(keep, name)``, which returns a fresh, empty :class:`DecisionStore` (``name``
tells apart several stores of one case), feeds it real fingerprinted texts batch by batch and asserts the
documented decisions (:mod:`fingerprint_indexer.engine.rules`) with their exact values: the same inputs
must give the same decisions on every store. A store makes every batch visible before the next one (an
Elasticsearch store refreshes), so cases that need it decide documents in one batch on purpose.

Use::

    @pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
    def test_contract(case, open_store):
        case(open_store)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from fingerprint_indexer.documents import Document
from fingerprint_indexer.engine.rules import Keep
from fingerprint_indexer.fingerprint.fingerprinter import Fingerprinter, FingerprintResult
from support.templates import DAY_1, DAY_2

K = 3

#: Two unrelated stories, written for these tests (long enough for a lead and several chunks).
STORY_A = (
    "市气象台今天上午发布台风橙色预警，今年第九号台风预计明天夜间在沿海地区登陆。\n"
    "受其影响，全市明后两天将有大到暴雨，局部地区有特大暴雨，沿海风力可达十级以上。\n"
    "防汛指挥部已启动二级应急响应，要求各区转移低洼地带和危旧房屋内的居民。\n"
    "教育部门通知，全市中小学和幼儿园明天停课一天，校外培训机构同步暂停线下课程。\n"
    "地铁运营公司表示，地面和高架区段将视风力情况限速运行，必要时停运。\n"
    "机场方面已取消明天下午起的部分进出港航班，旅客可免费办理退改签手续。\n"
    "港口码头停止装卸作业，渔船全部回港避风，海上养殖人员已经撤离上岸。\n"
    "电力部门组织抢修队伍在各区待命，储备了发电车和应急照明设备。\n"
    "气象专家提醒市民尽量减少外出，远离广告牌、临时搭建物和大树，关好门窗。\n"
    "如遇险情，可拨打应急热线求助，各区救援队伍将全天候值守。"
)
STORY_B = (
    "本赛季联赛第二十轮昨晚结束了全部比赛，领头羊主场两球击败升班马，继续领跑积分榜。\n"
    "上半场双方互有攻守，主队前锋在第三十八分钟接队友传中头球破门。\n"
    "易边再战，客队加强了中场逼抢，一度获得多次射门机会，但都被门将扑出。\n"
    "比赛第七十五分钟，主队替补登场的边锋突入禁区低射得手，锁定胜局。\n"
    "赛后主教练在新闻发布会上表示，球队在下半场调整了阵型，球员执行得很好。\n"
    "客队主帅则认为，球队在创造机会后的把握能力不足，需要在训练中继续改进。\n"
    "本场比赛吸引了四万多名球迷到场观战，创下本赛季的单场上座纪录。\n"
    "积分榜上，领头羊领先第二名五分，争冠形势已经逐渐明朗。\n"
    "下一轮比赛中，主队将客场挑战老对手，这场焦点之战将于下周六晚间打响。\n"
    "联赛官方表示，届时将在全国多个城市同步进行电视直播和网络直播。"
)
#: Extra sentences that make a longer copy of a story (keep=longest).
TAIL_1 = "\n记者将持续关注后续进展。"
TAIL_2 = "\n更多详细情况，请关注本台后续的相关报道。"


def edited(text: str) -> str:
    """A lightly edited repost: a site header, one line dropped, an ad line, an editor's footer."""
    lines = text.split("\n")
    del lines[len(lines) // 2]
    lines.insert(3, "点击下载客户端，阅读更多精彩内容")
    return "本文来源：某某网\n" + "\n".join(lines) + "\n(责任编辑：李四)"


class DecisionStore(Protocol):
    """One store under test, as the contract drives it."""

    def decide(self, batch: Sequence[tuple[Document, FingerprintResult]]) -> list[dict[str, Any]]:
        """Decide one batch (and make it visible to the next); the decisions as ``Decision.to_dict``."""

    def stored(self, doc_id: str) -> dict[str, Any]:
        """What the store now holds of a document: ``decision``, ``duplicate_of``, ``cluster_id``."""


OpenStore = Callable[[Keep, str], DecisionStore]

_FPR: Fingerprinter | None = None


def item(doc_id: str, text: str, published_at: str | None = None) -> tuple[Document, FingerprintResult]:
    global _FPR
    _FPR = _FPR or Fingerprinter()
    doc = Document(id=doc_id, content=text, published_at=published_at)
    return doc, _FPR.fingerprint_document(doc)


def _summary(out: list[dict[str, Any]]) -> list[tuple[str, str, str | None, str]]:
    return [(o["id"], o["decision"], o["duplicate_of"], o["cluster_id"]) for o in out]


# --------------------------------------------------------------------------------------------- cases
def new_exact_near(open_store: OpenStore) -> None:
    """An exact copy, an edited repost and another story: the same decisions in one batch as one by one."""
    docs = [item("a", STORY_A), item("b", STORY_A), item("c", edited(STORY_A)), item("d", STORY_B)]
    want = [("a", "new", None, "a"), ("b", "exact_duplicate", "a", "a"), ("c", "near_duplicate", "a", "a"),
            ("d", "new", None, "d")]  # fmt: skip
    together = open_store("first", "together").decide(docs)
    one_by_one = open_store("first", "apart")
    apart = [d for doc in docs for d in one_by_one.decide([doc])]
    for out in (together, apart):
        assert _summary(out) == want
        assert out[0]["distance"] is None and out[1]["distance"] == 0 and out[3]["distance"] is None
        assert 0 <= out[2]["distance"] <= K
    assert together == apart


def repeat_is_idempotent(open_store: OpenStore) -> None:
    """Deciding the same documents again repeats the stored decisions; a new copy still finds them."""
    store = open_store("first", "s")
    docs = [item("a", STORY_A), item("b", STORY_A), item("c", edited(STORY_A)), item("d", STORY_B)]
    first = store.decide(docs)
    assert store.decide(docs) == first
    assert store.decide(list(reversed(docs))) == list(reversed(first))
    late = store.decide([item("e", STORY_A)])
    assert _summary(late) == [("e", "exact_duplicate", "a", "a")]


def same_id_new_text(open_store: OpenStore) -> None:
    """An id stored again with other text is decided afresh (its old cluster stays taken), and links others
    hold to its old text are not followed to the new one: a later copy of the old text finds the copy
    that still holds it."""
    store = open_store("first", "s")
    store.decide([item("a", STORY_A)])
    store.decide([item("b", STORY_A)])
    out = store.decide([item("a", STORY_B)])
    assert _summary(out) == [("a", "new", None, "a~2")]
    later = store.decide([item("c", STORY_A)])
    assert _summary(later) == [("c", "exact_duplicate", "b", "a")]


def keep_longest_replaces(open_store: OpenStore) -> None:
    """keep=longest: a longer copy becomes the canonical, the old one points at it, later copies too, and the
    old canonical seen again says whose copy it is now."""
    store = open_store("longest", "s")
    store.decide([item("a", STORY_A)])
    out = store.decide([item("b", STORY_A + TAIL_1)])
    assert _summary(out) == [("b", "near_duplicate", None, "a")]
    assert out[0]["replaces"] == "a" and 0 <= out[0]["distance"] <= K
    assert (store.stored("a")["duplicate_of"], store.stored("a")["cluster_id"]) == ("b", "a")
    shorter = store.decide([item("c", STORY_A)])
    assert _summary(shorter) == [("c", "exact_duplicate", "b", "a")]
    again = store.decide([item("a", STORY_A)])
    assert _summary(again) == [("a", "near_duplicate", "b", "a")]
    assert store.decide([item("b", STORY_A + TAIL_1)]) == out  # the new canonical repeats ``replaces``


def keep_newest_replaces(open_store: OpenStore) -> None:
    """keep=newest: a copy published later becomes the canonical; an older copy joins it."""
    store = open_store("newest", "s")
    store.decide([item("a", STORY_A, "2024-05-01T08:00:00")])
    out = store.decide([item("b", edited(STORY_A), "2024-05-02T08:00:00")])
    assert _summary(out) == [("b", "near_duplicate", None, "a")] and out[0]["replaces"] == "a"
    older = store.decide([item("c", STORY_A, "2024-04-30T08:00:00")])
    assert _summary(older) == [("c", "exact_duplicate", "b", "a")]
    undated = store.decide([item("d", edited(STORY_A) + "\n完")])
    assert _summary(undated) == [("d", "near_duplicate", "b", "a")] and "replaces" not in undated[0]


def chains_are_followed(open_store: OpenStore) -> None:
    """keep=longest twice over: a -> b -> c; a copy of a points at the end of the chain, in one batch too."""
    for name, split in (("apart", True), ("together", False)):
        store = open_store("longest", name)
        docs = [item("a", STORY_A), item("b", STORY_A + TAIL_1), item("c", STORY_A + TAIL_1 + TAIL_2),
                item("d", STORY_A)]  # fmt: skip
        out = [d for doc in docs for d in store.decide([doc])] if split else store.decide(docs)
        assert _summary(out) == [("a", "new", None, "a"), ("b", "near_duplicate", None, "a"),
                                 ("c", "near_duplicate", None, "a"), ("d", "exact_duplicate", "c", "a")]
        assert [o.get("replaces") for o in out] == [None, "a", "b", None]
        assert [store.stored(i)["duplicate_of"] for i in "abcd"] == ["b", "c", None, "c"]


def clusters(open_store: OpenStore) -> None:
    """A copy joins the cluster of what it matched, a new story founds its own named after it, and a later
    run continues the clusters of the first."""
    store = open_store("first", "s")
    out = store.decide([item("x", STORY_B), item("y", STORY_A), item("z", edited(STORY_B))])
    assert _summary(out) == [("x", "new", None, "x"), ("y", "new", None, "y"),
                             ("z", "near_duplicate", "x", "x")]
    later = store.decide([item("w", edited(STORY_A)), item("v", STORY_B + TAIL_1)])
    assert _summary(later) == [("w", "near_duplicate", "y", "y"), ("v", "near_duplicate", "x", "x")]


def degenerate(open_store: OpenStore) -> None:
    """Texts too short to fingerprint are matched exactly only, each alone otherwise."""
    store = open_store("first", "s")
    out = store.decide([item("p", "短"), item("q", "短"), item("r", "好")])
    assert _summary(out) == [("p", "new", None, "p"), ("q", "exact_duplicate", "p", "p"),
                             ("r", "new", None, "r")]
    assert [o.get("degenerate") for o in out] == [True, True, True]
    later = store.decide([item("s", "短")])
    assert _summary(later) == [("s", "exact_duplicate", "p", "p")]


def template_pair_stays_new(open_store: OpenStore) -> None:
    """Two daily bulletins of one template, other figures and dates: two stories, in one batch or two; an
    exact copy of one is still its duplicate."""
    for name, split in (("apart", True), ("together", False)):
        store = open_store("first", name)
        docs = [item("day1", DAY_1), item("day2", DAY_2), item("day2-copy", DAY_2)]
        out = [d for doc in docs for d in store.decide([doc])] if split else store.decide(docs)
        assert _summary(out) == [("day1", "new", None, "day1"), ("day2", "new", None, "day2"),
                                 ("day2-copy", "exact_duplicate", "day2", "day2")]


CASES = [new_exact_near, repeat_is_idempotent, same_id_new_text, keep_longest_replaces, keep_newest_replaces,
         chains_are_followed, clusters, degenerate, template_pair_stays_new]  # fmt: skip
