import dataclasses
import math

import pytest
from scipy.stats import pearsonr
from seqeval.metrics import f1_score as seqeval_f1
from sklearn.metrics import accuracy_score, f1_score

from blurbflow.metrics import (
    BLURB_TYPES,
    METRICS,
    blurb_label,
    blurb_score,
    chance_baseline,
    compute_metric,
    entity_f1,
    hoc_micro_f1,
    micro_f1,
    pearson,
    pico_macro_f1,
    positive_f1,
)
from blurbflow.tasks import TASKS, get_task


def test_every_registry_metric_is_implemented():
    assert {spec.metric for spec in TASKS.values()} <= set(METRICS)
    # BLURB's six in the papers' order, then the types beyond BLURB (users' own tasks)
    assert BLURB_TYPES[:6] == ("ner", "pico", "re", "sts", "doccls", "qa")


def test_macro_f1_matches_sklearn():
    gold = ["a", "b", "b", "c", "a"]
    pred = ["a", "b", "c", "c", "b"]
    expected = 100 * f1_score(gold, pred, average="macro", labels=["a", "b", "c"])
    assert METRICS["macro_f1"](gold, pred, labels=("a", "b", "c")) == pytest.approx(expected)


def test_entity_f1_two_gold_entities_one_found():
    gold = [["B", "I", "O", "B"]]
    pred = [["B", "I", "O", "O"]]
    # precision 1/1, recall 1/2 -> F1 = 2/3
    assert entity_f1(gold, pred) == pytest.approx(200 / 3)
    assert entity_f1(gold, pred) == pytest.approx(100 * seqeval_f1(gold, pred))


def test_entity_f1_conlleval_semantics_and_boundaries():
    gold = [["B", "I", "O"], ["O", "B", "O"]]
    # an I after O starts an entity (conlleval); a wrong boundary is both an FP and an FN
    pred = [["I", "I", "O"], ["O", "B", "I"]]
    assert entity_f1(gold, pred) == pytest.approx(50.0)
    assert entity_f1(gold, pred) == pytest.approx(100 * seqeval_f1(gold, pred))
    assert entity_f1([["O", "O"]], [["O", "O"]]) == 0.0
    with pytest.raises(ValueError, match="sentence 0"):
        entity_f1([["O", "O"]], [["O"]])


def test_pico_macro_f1_excludes_o_and_matches_sklearn():
    gold = ["I-PAR", "I-PAR", "O", "I-INT", "I-OUT", "O"]
    pred = ["I-PAR", "O", "O", "I-INT", "I-PAR", "I-OUT"]
    # PAR: tp1 fp1 fn1 -> 0.5; INT: 1.0; OUT: tp0 -> 0  => macro 50
    assert pico_macro_f1(gold, pred) == pytest.approx(50.0)
    expected = f1_score(gold, pred, labels=["I-PAR", "I-INT", "I-OUT"], average="macro")
    assert pico_macro_f1(gold, pred) == pytest.approx(100 * expected)
    # per-sentence input is flattened
    assert pico_macro_f1([gold[:3], gold[3:]], [pred[:3], pred[3:]]) == pytest.approx(50.0)


def test_micro_f1_excludes_negative_label():
    gold = ["CPR:3", "CPR:4", "false", "false", "CPR:9"]
    pred = ["CPR:3", "CPR:9", "CPR:4", "false", "false"]
    # tp1, fp2 (CPR:9 on CPR:4, CPR:4 on false), fn2 -> 2/(2+2+2) = 1/3
    assert micro_f1(gold, pred, negative_label="false") == pytest.approx(100 / 3)
    expected = f1_score(gold, pred, labels=["CPR:3", "CPR:4", "CPR:9"], average="micro")
    assert micro_f1(gold, pred, negative_label="false") == pytest.approx(100 * expected)
    assert compute_metric(get_task("chemprot"), gold, pred) == pytest.approx(100 / 3)


def test_positive_f1_and_gad_dispatch():
    gold = ["1", "1", "0", "0", "1"]
    pred = ["1", "0", "1", "0", "1"]
    expected = f1_score(gold, pred, pos_label="1")
    assert positive_f1(gold, pred) == pytest.approx(100 * expected)  # 2/3
    assert compute_metric(get_task("gad"), gold, pred) == pytest.approx(200 / 3)


def test_pearson_against_scipy_and_constant_prediction():
    gold = [0.0, 1.0, 2.5, 3.0, 4.0]
    pred = [0.2, 1.1, 2.0, 3.5, 3.9]
    assert pearson(gold, pred) == pytest.approx(100 * pearsonr(gold, pred).statistic)
    assert pearson(gold, [2.0] * 5) == 0.0


def test_hoc_micro_f1_pools_cells_over_abstracts():
    gold = [["a", "b"], [], ["c"]]
    pred = [["a"], ["b"], ["c", "d"]]
    # tp: a, c = 2; fp: b, d = 2; fn: b = 1 -> 4/(4+2+1) = 4/7
    assert hoc_micro_f1(gold, pred) == pytest.approx(400 / 7)
    labels = ["a", "b", "c", "d"]
    onehot = [[int(label in row) for label in labels] for row in gold]
    pred_onehot = [[int(label in row) for label in labels] for row in pred]
    assert hoc_micro_f1(gold, pred) == pytest.approx(
        100 * f1_score(onehot, pred_onehot, average="micro")
    )
    # restricting to the scored labels drops "d": tp 2, fp 1, fn 1 -> 2/3
    assert hoc_micro_f1(gold, pred, labels=["a", "b", "c"]) == pytest.approx(200 / 3)


def test_hoc_macro_f1_averages_each_hallmarks_f1():
    from blurbflow.metrics import hoc_macro_f1

    gold = [["a", "b"], [], ["c"]]
    pred = [["a"], ["b"], ["c", "d"]]
    # per label: a 1 (tp 1), b 0 (fp 1, fn 1), c 1 (tp 1), d 0 (fp 1) -> mean 1/2
    assert hoc_macro_f1(gold, pred) == pytest.approx(50.0)
    labels = ["a", "b", "c", "d"]
    onehot = [[int(label in row) for label in labels] for row in gold]
    pred_onehot = [[int(label in row) for label in labels] for row in pred]
    assert hoc_macro_f1(gold, pred) == pytest.approx(
        100 * f1_score(onehot, pred_onehot, average="macro", zero_division=0)
    )
    # the scored labels: "d" dropped -> (1 + 0 + 1) / 3; a hallmark never seen scores 0
    assert hoc_macro_f1(gold, pred, labels=["a", "b", "c"]) == pytest.approx(200 / 3)
    assert hoc_macro_f1(gold, pred, labels=["a", "b", "c", "e"]) == pytest.approx(50.0)
    # it differs from the pooled reading on the same decisions (4/7 there)
    assert hoc_macro_f1(gold, pred) != pytest.approx(hoc_micro_f1(gold, pred))


def test_hoc_cells_record_both_readings_and_keep_the_pooled_one():
    from blurbflow.metrics import also_reported, chance_baseline
    from blurbflow.tasks.types import metric_family

    hoc = get_task("hoc")
    assert hoc.metric == "hoc_micro_f1"  # the cell's dev/test (selection, result.json)
    assert metric_family(hoc.metric) == ("hoc_micro_f1", "hoc_macro_f1")
    a, b = hoc.labels[0], hoc.labels[1]
    gold, pred = [[a, b], [a]], [[a], [a, b]]
    scores = also_reported(hoc, gold, pred)
    # pooled: tp 2, fp 1, fn 1 -> 2/3; per hallmark over the ten: a 1, b 0, eight unseen 0
    assert scores == {"hoc_micro_f1": pytest.approx(200 / 3), "hoc_macro_f1": pytest.approx(10.0)}
    assert compute_metric(hoc, gold, pred) == scores["hoc_micro_f1"]
    macro = dataclasses.replace(hoc, metric="hoc_macro_f1")
    # its chance: the constant {a} (chosen on train), on eval a's F1 2/3 over ten hallmarks
    assert chance_baseline(macro, [[a], [a]], [[a], []]) == pytest.approx(20 / 3)


def test_accuracy():
    gold, pred = ["yes", "no", "maybe", "yes"], ["yes", "no", "no", "no"]
    assert compute_metric(get_task("pubmedqa"), gold, pred) == pytest.approx(
        100 * accuracy_score(gold, pred)
    )


def test_length_mismatch_is_an_error():
    with pytest.raises(ValueError):
        micro_f1(["a"], ["a", "b"])


def test_chance_baselines():
    assert chance_baseline(get_task("bc5chem"), [], [["B", "I", "O"]]) == 0.0
    assert chance_baseline(get_task("ebmpico"), [], ["I-PAR", "O"]) == 0.0
    assert chance_baseline(get_task("biosses"), [1.0, 2.0], [1.0, 3.0]) == 0.0
    # accuracy: the train majority ("yes"), scored on eval
    qa = get_task("pubmedqa")
    assert chance_baseline(qa, ["yes", "yes", "no"], ["yes", "no", "maybe", "no"]) == 25.0
    # RE: the negative majority scores 0 unless a positive label alone does better
    assert chance_baseline(get_task("ddi"), ["DDI-false"] * 3, ["DDI-false", "DDI-int"]) == 0.0
    chemprot = get_task("chemprot")
    assert chance_baseline(chemprot, ["false"] * 9 + ["CPR:4"], ["false", "CPR:4"]) == (
        pytest.approx(100 * 2 / 3)
    )
    # GAD: always "1" beats the "0" majority; int labels are accepted
    gad = get_task("gad")
    eval_gold = ["1", "0", "0", "1"]
    assert chance_baseline(gad, [0, 0, 0, 1], eval_gold) == pytest.approx(
        100 * f1_score(eval_gold, ["1"] * 4, pos_label="1")
    )


def test_chance_baseline_hoc_best_constant_label_set():
    hoc = get_task("hoc")
    label = hoc.labels[0]
    train = [[label], [label], [], [hoc.labels[1]]]
    eval_gold = [[label], [], [label, hoc.labels[2]]]
    # predicting {label} everywhere: tp 2, fp 1, fn 1 -> 2/3
    assert chance_baseline(hoc, train, eval_gold) == pytest.approx(200 / 3)


def test_blurb_score_macro_over_types():
    scores = {
        "bc5chem": 90.0,
        "ncbidisease": 80.0,
        "chemprot": 70.0,
        "ddi": 80.0,
        "gad": 90.0,
        "biosses": 60.0,
    }
    # ner 85, re 80, sts 60 -> 75
    assert blurb_score(scores) == pytest.approx(75.0)
    assert blurb_label(scores) == "BLURB-style average (ner, re, sts)"
    from blurbflow.metrics.blurb import BLURB_TASKS, blurb_parts
    from blurbflow.tasks import builtin

    blurb13 = [spec.name for spec in builtin.ENTRIES]
    assert blurb_label(blurb13) == "BLURB" and sorted(BLURB_TASKS) == sorted(blurb13)
    # all six types but not BLURB's 13 (an extra NER set, one missing): not the BLURB score
    assert blurb_label([*blurb13[1:], "linnaeus"]).startswith("BLURB-style average (ner, pico")
    assert blurb_parts(blurb13) == [("BLURB", blurb13)]
    # BLURB's 13 and more: both, the BLURB score over exactly the 13
    more = [*blurb13, "linnaeus", "squad"]
    parts = blurb_parts(more)
    assert parts[0] == ("BLURB", blurb13)
    assert parts[1][0].startswith("BLURB-style average (ner, pico") and parts[1][1] == more
    assert math.isnan(blurb_score({}))
    assert math.isnan(blurb_score({"bc5chem": math.nan, "biosses": 60.0}))


def test_relaxed_entity_f1_counts_overlaps_by_hand():
    from blurbflow.metrics import relaxed_entity_f1

    # gold entities: tokens 0-1 and 3; predicted: token 1 (overlaps the first) and token 5
    gold = [["B", "I", "O", "B", "O", "O"]]
    pred = [["O", "B", "O", "O", "O", "B"]]
    # precision 1/2 (the one at 5 overlaps nothing), recall 1/2 (the entity at 3 is missed)
    assert relaxed_entity_f1(gold, pred) == pytest.approx(50.0)
    assert entity_f1(gold, pred) == 0.0  # no boundary matches exactly
    # exact predictions score as strict F1 does; typed entities must agree on their type
    assert relaxed_entity_f1(gold, gold) == pytest.approx(100.0)
    typed_gold = [["B-protein", "I-protein", "O", "B-DNA"]]
    typed_pred = [["B-DNA", "I-DNA", "O", "B-DNA"]]
    assert relaxed_entity_f1(typed_gold, typed_pred) == pytest.approx(50.0)
    # one wide prediction overlapping two gold entities: both found, the prediction correct
    assert relaxed_entity_f1([["B", "O", "B"]], [["B", "I", "I"]]) == pytest.approx(100.0)
    assert relaxed_entity_f1([["O", "O"]], [["O", "O"]]) == 0.0
    with pytest.raises(ValueError, match="sentence 0: 2 gold tags but 1 predicted"):
        relaxed_entity_f1([["B", "O"]], [["B"]])


def test_ner_cells_record_strict_and_relaxed_entity_f1():
    from blurbflow.metrics import also_reported
    from blurbflow.tasks import get_task

    scores = also_reported(get_task("bc5chem"), [["B", "I", "O"]], [["O", "B", "O"]])
    assert scores == {"entity_f1": 0.0, "relaxed_entity_f1": pytest.approx(100.0)}
