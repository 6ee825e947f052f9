"""Pinned sha256 digests of the files BLURB's parsers read (see sources.READS), measured on the
original files with blurbflow.data.fetch.tree_digest. EBM-NLP and BioASQ were not obtainable
where these were pinned: their digests are recorded at fetch time (SHA256SUMS), not verified."""

# fmt: off
CHECKSUMS: dict[str, dict[str, str]] = {
    "bc5chem": {
        "train.tsv":
            "0a044afcb5e3ff7fe18144af6dd24d934022dfda9de2402f4333e2b20188a008",
        "devel.tsv":
            "02eb8daf2c643b5d423b1a871522f9e66dff0abfcf37276b4909412d72f0af82",
        "test.tsv":
            "6a50087fd47314f92174bf36199053e30f46b059ca6618c9bf8c26e3ab878eee",
    },
    "bc5disease": {
        "train.tsv":
            "2d6ddd52fd05280d55f11c9cb35484e31a414ad7cf8667a996563aba6efe1692",
        "devel.tsv":
            "601a6fa7332a9f09b69ff34c55ed9c6e7bb8abf6f70beca39c54d4b61bdb267f",
        "test.tsv":
            "0c4d44f7b7ff06e93e1117d7bd6389aef10a7baa5db41de995d01802c4d6e4bd",
    },
    "ncbidisease": {
        "train.tsv":
            "2ae6e98a7201ece76ebf687bf3c7a3ca5892233a63f6c5a576520aad3b008ad3",
        "devel.tsv":
            "7b6b45a23cbac2eff245840e3d9e94cfd632827a5d17afd573f624cdaa91350f",
        "test.tsv":
            "9c4ff4a20672d7da0e5877bbf7875ad8b92e36f0ee9d2cdad5a728d7f0ff3241",
    },
    "bc2gm": {
        "train.tsv":
            "1546d44e133c8b7e7bef0eb4fdf8120324f627f8bc03706cf06d07d1612ad99f",
        "devel.tsv":
            "956581fd40e34579af5300f3cdc650117c0616549d82798a0b16e3aedb2a9ced",
        "test.tsv":
            "d741434b6b2416fe31b3130a3273ae8fb0da022c6f57c925d954f47dd5e64a6b",
    },
    "jnlpba": {
        "train.tsv":
            "8dfa29b19252af8962725eb651503944362b99c329729d5d9499eab4b2d8e724",
        "devel.tsv":
            "6b10200124e350a5daaeb9c81a85aa25fbd404b6420ed9e3d27dae8f331178fd",
        "test.tsv":
            "c27e85983c75b949673710c37d138c06137e35ff985cb7b419bedd185f8a0f7c",
    },
    "gad": {
        "GAD/*/*.tsv":
            "c500fd21536a08bb12a685d6cc6eaf7bcc60baee0b54d2079f9312479304753d",
    },
    "biosses": {
        "annotation_pairs_scores.tsv":
            "bb235f8609e3bcc90993447c221fd4a8b986673661764bf7cd58dc521f642fba",
    },
    "hoc": {
        "Hallmarks-of-Cancer-master/text/*.txt":
            "de070491e3f7abd2be6805cccf0f524df7ecd03691bd68480eb6b4a21d275f42",
        "Hallmarks-of-Cancer-master/labels/*.txt":
            "2e9b27b0d940b76de067bfc2d44526a522074c43432290952670ef339590a9eb",
    },
    "pubmedqa": {
        "ori_pqal.json":
            "50bd5559349f4bcf8360224e27e5f1690b3f694da838c4d283575174cfcc3f14",
        "test_ground_truth.json":
            "1e04252bb5698dd258b46f50fd720f0460143162955f62de8f0098a1285db05a",
    },
    "blurb-index": {
        "data_generation/indexing/*/*.tsv":
            "d779151640191722da82c0ef41d969796597fe8727ef3884794794d4b3e7c987",
    },
    "chemprot": {
        "ChemProt_Corpus/chemprot_*/*.tsv":
            "0037cc04d4d1c63faa1075b5f4793e9b5837d869241911c34ecc631d34d19182",
    },
    "ddi": {
        "DDIextraction_2013/*/*/*.xml":
            "cf838eb23504c18465ec18737693162a5abea745f3048b695c916bff7e99028b",
    },
}
# fmt: on
