"""Two items of one news template with other facts (daily bulletins of two days), for the tests of the
verification rule: fingerprints and sketch call them near-duplicates, their facts do not."""

from __future__ import annotations

BULLETIN = (
    "国家卫生健康委今天({m}月{d}日)通报,{m}月{p}日0—24时,31个省(自治区、直辖市)和新疆生产建设兵团报告新增"
    "新冠肺炎确诊病例{n1}例,其中境外输入病例{n2}例,本土病例{n3}例。\n新增无症状感染者{n4}例,其中境外输入{n5}例,"
    "本土{n6}例。\n截至{m}月{p}日24时,现有确诊病例{n7}例。\n截至{m}月{p}日,各地累计报告接种新冠病毒疫苗{n8}万剂次。"
)
DAY_1 = BULLETIN.format(m=11, d=7, p=6, n1=569, n2=34, n3=535, n4=5074, n5=113, n6=4961, n7=6617, n8=344042.1)
DAY_2 = BULLETIN.format(m=11, d=2, p=1, n1=465, n2=56, n3=409, n4=2463, n5=117, n6=2346, n7=4854, n8=343990.7)

#: Real headline edits (a word, a comma, a prefix): the SimHash moves far beyond k, a sketch band stays.
EDITED_HEADLINES = [
    ("为什么很多人明明没钱，还一定要买新车，不买二手车呢？",
     "为什么很多人明明没钱还一定要买新车，不买二手车呢？"),
    ("楼市政策大调整！又一炒房之路被堵死了", "昨晚，楼市政策大调整！又一炒房之路被堵死了"),
    ("考生注意！倒计时一个月 今年高考有这些新变化！", "巨鹿考生注意！倒计时一个月 今年高考有这些新变化！"),
]
