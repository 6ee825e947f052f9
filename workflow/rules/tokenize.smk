# Tokenize once per (tokenizer, task, input length); every cell of that key reuses it.


rule tokenize:
    input:
        data=multiext("resources/data/{task}/", "train.parquet", "dev.parquet", "test.parquet"),
        model=lambda wildcards: model_inputs(wildcards.model),
    output:
        directory("resources/tokenized/{model}/{task}/L{max_length}"),
    params:
        tokenizer=lambda wildcards: model_source(wildcards.model),
    log:
        "results/logs/tokenize/{model}/{task}/L{max_length}.log",
    conda:
        BLURBFLOW_ENV
    shell:
        "blurbflow tokenize --task {wildcards.task} --data resources/data/{wildcards.task} "
        "--tokenizer {params.tokenizer} --max-length {wildcards.max_length} --out {output} "
        "> {log} 2>&1"
