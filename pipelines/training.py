"""The training pipeline: shard -> train -> freeze_quantize -> export_tflite -> batch_predict.

Sharding fans out over groups of input files (``file_groups`` tasks, merged into one
Dataset); with the default of one group it is a single task. ``diagnose`` runs
diagnose_bottleneck on the Dataset beside training. With ``tune_trials`` above 0, a tune
step (a study of that many trials) takes train's place, the pipeline's train settings the
defaults of what its search space leaves out; the best trial's model goes on
(``dsl.OneOf``). The export's accuracy gate fails the run, with its figures, when the TFLite
model is not good enough.
"""

from typing import Any, Dict, List, NamedTuple

from kfp import dsl

from tfkfp.components.batch_predict.component import batch_predict
from tfkfp.components.deploy_model.component import deploy_gate, deploy_model, smoke_test
from tfkfp.components.diagnose_bottleneck.component import diagnose_bottleneck
from tfkfp.components.export_tflite.component import export_tflite
from tfkfp.components.freeze_quantize.component import freeze_quantize
from tfkfp.components.merge_datasets.component import merge_datasets
from tfkfp.components.shard_tfrecords.component import group_numbers, shard_tfrecords
from tfkfp.components.train.component import gpu_train, train
from tfkfp.components.tune.component import train_settings, tune
from tfkfp.pipelines import checks
from tfkfp.pipelines.accelerator import Gpu
from tfkfp.pipelines.deployment import check_deploy, gate, roll_out
from tfkfp.pipelines.fan_out import check_group_count, fingerprinted
from tfkfp.pipelines.kfp_local import teach_oneof_artifacts
from tfkfp.pipelines.resources import sized
from tfkfp.pipelines.step_defaults import by_name, defaults_of

# The pipeline's parameters that go to the train step unchanged (same names); the tune
# step takes them, and model_fn, as its train_defaults.
# a parameter's default is the step's: step_defaults.py
DEFAULTS = defaults_of(shard_tfrecords, diagnose_bottleneck, train, tune, freeze_quantize,
                       export_tflite, batch_predict, deploy_gate, deploy_model, smoke_test)


teach_oneof_artifacts()  # the model of tune or train, in a kfp.local run too (kfp_local.py)


class Outputs(NamedTuple):
    model: dsl.Model
    tflite: dsl.Model
    predictions: dsl.Dataset


def make_training(gpu: Gpu | None = None):
    """The training pipeline; with ``gpu``, train runs in the GPU image and asks for GPUs."""
    train_step = train if gpu is None else gpu_train()

    @dsl.pipeline(name="tfkfp-training",
                  description="Shard, train with a tf.distribute strategy, quantize, export to "
                              "TFLite behind an accuracy gate, and predict the eval split.")
    def training(
        input_uri: str,
        label: str,
        keys: List[str] = DEFAULTS.keys,
        column_types: Dict[str, str] = DEFAULTS.column_types,
        input_format: str = DEFAULTS.input_format,
        eval_fraction: float = DEFAULTS.eval_fraction,
        compression: str = DEFAULTS.compression,
        missing: str = DEFAULTS.missing,
        layout: str = DEFAULTS.layout,
        file_groups: int = DEFAULTS.file_groups,
        model_name: str = DEFAULTS.model_name,
        model_fn: str = DEFAULTS.model_fn,
        hidden_units: str = DEFAULTS.hidden_units,
        strategy: str = DEFAULTS.strategy,
        workers: int = DEFAULTS.workers,
        parameter_servers: int = DEFAULTS.parameter_servers,
        tpu: str = DEFAULTS.tpu,
        launcher: str = DEFAULTS.launcher,
        launcher_options: dict = DEFAULTS.launcher_options,
        epochs: int = DEFAULTS.epochs,
        batch_size: int = DEFAULTS.batch_size,
        learning_rate: float = DEFAULTS.learning_rate,
        precision: str = DEFAULTS.precision,
        checkpoint_dir: str = DEFAULTS.checkpoint_dir,
        warm_start_model_uri: str = DEFAULTS.warm_start_model_uri,
        task: str = DEFAULTS.task,
        loss: str = DEFAULTS.loss,
        target_metric: str = DEFAULTS.target_metric,
        target_value: float = DEFAULTS.target_value,
        quantization: str = DEFAULTS.quantization,
        max_accuracy_drop: float = DEFAULTS.max_accuracy_drop,
        min_agreement: float = DEFAULTS.min_agreement,
        max_rmse_increase: float = DEFAULTS.max_rmse_increase,
        output_format: str = DEFAULTS.output_format,
        max_error_fraction: float = DEFAULTS.max_error_fraction,
        diagnose: bool = False,
        deploy: str = "none",
        service_name: str = DEFAULTS.service_name,
        deploy_options: dict = DEFAULTS.deploy_options,
        serving_model_uri: str = DEFAULTS.serving_model_uri,
        gate_metric: str = DEFAULTS.gate_metric,
        gate_margin: float = DEFAULTS.gate_margin,
        smoke_rows: int = DEFAULTS.smoke_rows,
        data_root: str = DEFAULTS.data_root,
        input_layout: str = DEFAULTS.input_layout,
        tune_trials: int = 0,
        search_space: dict = DEFAULTS.search_space,
        tune_objective: str = "",
        parallel_trials: int = DEFAULTS.parallel_trials,
        study_dir: str = DEFAULTS.study_dir,
        tune_engine: str = "local",
        tune_engine_options: dict = {},  # noqa: B006
    ) -> Outputs:
        """Trains a classifier or regressor on raw data; ships it as a validated TFLite model.

        Args:
            input_uri: File, folder, pattern or gs://, s3:// or minio:// URI of the labelled
                input data.
            label: Label column (images: the class folder).
            keys: Passthrough key columns carried into predictions.
            column_types: Column types overriding inference, e.g. {"zip": "string"}: float32,
                int64 or string.
            input_format: Format of the input files: auto (from their extensions), csv,
                jsonl, parquet, npz or images.
            eval_fraction: Share of rows held out for evaluation.
            compression: TFRecord compression: none or gzip.
            missing: impute (keep rows with blank, null or NaN values: the model fills numbers
                with the column mean and maps empty strings to out-of-vocabulary) or error
                (refuse the first gap). A blank label is always refused.
            layout: Shard record layout: packed (scalar numbers as one list feature per
                dtype, parses about twice as fast), columns (one feature per column) or
                blocks (packed, 256 rows per record: fastest to read, tfkfp readers only).
            file_groups: Parallel sharding tasks over groups of input files (1: one task).
            model_name: mlp, cnn, resnet50 or mobilenet_v2.
            model_fn: package.module:function building a custom tf_keras model.
            hidden_units: Comma-separated dense layer sizes.
            strategy: default, one_device, mirrored, multi_worker_mirrored, parameter_server, tpu.
            workers: Worker processes for the multi-process strategies.
            parameter_servers: Parameter servers for parameter_server.
            tpu: TPU name or address for strategy tpu; empty looks for a local TPU.
            launcher: Where training runs: local (the train step's pod), trainjob (a Kubeflow
                Trainer v2 TrainJob, for many machines), tfjob (a Kubeflow Training Operator
                TFJob) or vertex (a Vertex AI CustomJob).
            launcher_options: trainjob/tfjob/vertex settings, e.g. {"job_dir": "gs://b/jobs",
                "gpus": 1}; see the train component.
            epochs: Training epochs.
            batch_size: Per-replica batch size.
            learning_rate: Optimizer learning rate.
            precision: float32, mixed_float16 or mixed_bfloat16.
            checkpoint_dir: URI for checkpoints that survive a rerun; empty for none.
            warm_start_model_uri: An earlier model from train to continue from (gs://... or a
                path the train step can read), for the same classes and model_name; empty
                trains from scratch.
            task: auto (a float label is regressed on, an integer or string label classified),
                classification or regression.
            loss: Empty for the task's own (crossentropy; regression: mse), or huber.
            target_metric: The eval figure whose target is timed: accuracy or loss
                (classification), rmse, mae, r2 or loss (regression); empty: accuracy or rmse.
            target_value: Its target (reached at or above for accuracy and r2, at or below
                for the others); 0 for none.
            quantization: none, dynamic, float16, int8, int16x8, or auto (smallest model within
                the gate).
            max_accuracy_drop: Largest accuracy loss of the TFLite model the gate accepts.
            min_agreement: Smallest top-1 agreement with the SavedModel the gate accepts.
            max_rmse_increase: A regressor's gate: largest RMSE increase of the TFLite model
                over the SavedModel's, relative (0.05: 5% higher).
            output_format: Predictions as jsonl, csv or tfrecord.
            max_error_fraction: Largest share of the eval split's rows that may fail
                prediction (unreadable, unparsable or failed by the model); above it the
                run fails, naming how many rows failed and their errors file (0: any error
                fails it; 1: none does).
            diagnose: Also run diagnose_bottleneck on the Dataset with the training settings
                (input-, compute- or memory-bound, with remedies), beside train.
            deploy: none, kserve, vertex or existing: after the export gate passes, deploy the
                SavedModel there when deploy_gate finds it no worse than the serving one,
                then smoke-test the endpoint (see the serving pipeline).
            service_name: The service's name and the model's name in its URLs.
            deploy_options: See deploy_model, e.g. {"namespace": "team", "mode": "knative"}.
            serving_model_uri: The model serving now; empty: what the target records.
            gate_metric: accuracy or log_loss (a regressor: rmse or mae), measured on the eval
                split.
            gate_margin: How much worse than the serving model the new one may be.
            smoke_rows: Rows of the eval split the smoke test sends.
            data_root: Where the shards are kept: auto (beside the Dataset artifact on the
                pipeline root's object store when the steps can write there, else inside
                it), inside, or a path or s3://, minio://, gs:// URI. Shards outside the
                artifact are written once and streamed by each step; see shard_tfrecords.
            input_layout: The TFLite bundle's inputs: packed (one float32 and one int32
                [batch, n] input in the schema's column order, what mobile apps feed) or
                columns (one input per column).
            tune_trials: 0 trains once with the settings above; more runs a tune step
                in train's place, a study of that many trials over search_space (the
                settings above the defaults of what it leaves out), and the best trial's
                model goes on. See the tuning pipeline.
            search_space: Setting -> {"type": "float" or "int", "low", "high", "log"} or
                {"type": "categorical", "choices": [...]}; empty: the default space
                (learning_rate, batch_size, hidden_units, optimizer).
            tune_objective: The eval figure tuned: eval_accuracy or eval_loss
                (classification), eval_rmse, eval_mae, eval_r2 or eval_loss (regression);
                empty: eval_accuracy or eval_rmse.
            parallel_trials: Trials run at a time, sharing the tune step's cores.
            study_dir: A path on a volume that outlives the step: a rerun resumes the
                study there. Empty: no resume.
            tune_engine: local (trials in the tune step's pod), katib or vertex.
            tune_engine_options: katib or vertex settings; see the tune component.

        Returns:
            model: The trained (or best tuned) SavedModel (serving_default and serving_raw
                signatures); eval accuracy (a regressor's RMSE, MAE, R²) and training
                throughput in its metadata.
            tflite: The TFLite bundle that passed the gate (model.tflite,
                labels.txt for a classifier, signature.json, schema.json); its quantization
                mode, size, accuracy and agreement with the SavedModel (a regressor's RMSE)
                in its metadata.
            predictions: The eval split's predictions and errors files; counts, the share
                of rows that failed (error_fraction) and records per second in its metadata.
        """
        settings = locals()  # the parameters, by name (train_defaults is built from them)
        fingerprint = fingerprinted(input_uri, input_format)
        groups = group_numbers(count=file_groups)
        with dsl.ParallelFor(groups.output) as group:
            part = shard_tfrecords(input_uri=input_uri, label=label, keys=keys,
                                   column_types=column_types, input_format=input_format,
                                   eval_fraction=eval_fraction, compression=compression,
                                   missing=missing, layout=layout, file_group=group,
                                   file_groups=file_groups, data_root=data_root,
                                   input_fingerprint=fingerprint.output)
        data = merge_datasets(datasets=dsl.Collected(part.outputs["dataset"]))
        dataset = data.outputs["dataset"]
        with dsl.If(diagnose == True, name="diagnose"):  # noqa: E712 - a KFP condition
            diagnose_bottleneck(dataset=dataset, model_name=model_name, model_fn=model_fn,
                                hidden_units=hidden_units, batch_size=batch_size,
                                precision=precision, task=task)
        with dsl.If(tune_trials > 0, name="tune"):
            defaults = train_settings(**by_name(train_settings, settings))
            tuned = tune(dataset=dataset, search_space=search_space, objective=tune_objective,
                         trials=tune_trials, parallel_trials=parallel_trials,
                         study_dir=study_dir, engine=tune_engine,
                         engine_options=tune_engine_options,
                         train_defaults=defaults.output)
        with dsl.Else(name="train"):
            trained = train_step(
                dataset=dataset, model_name=model_name, model_fn=model_fn,
                hidden_units=hidden_units, strategy=strategy, workers=workers,
                parameter_servers=parameter_servers, tpu=tpu, launcher=launcher,
                launcher_options=launcher_options, epochs=epochs, batch_size=batch_size,
                learning_rate=learning_rate, precision=precision,
                checkpoint_dir=checkpoint_dir, warm_start_model_uri=warm_start_model_uri,
                task=task, loss=loss, target_metric=target_metric, target_value=target_value)
            if gpu is not None:  # read by the cluster's scheduler; ignored by the local runner
                trained.set_accelerator_type(gpu.type).set_accelerator_limit(gpu.count)
        model = dsl.OneOf(tuned.outputs["model"], trained.outputs["model"])
        quantized = freeze_quantize(model=model, dataset=dataset,
                                    quantization=quantization, max_accuracy_drop=max_accuracy_drop,
                                    max_rmse_increase=max_rmse_increase,
                                    input_layout=input_layout)
        exported = export_tflite(model=model, dataset=dataset,
                                 tflite_model=quantized.outputs["tflite_model"],
                                 max_accuracy_drop=max_accuracy_drop, min_agreement=min_agreement,
                                 max_rmse_increase=max_rmse_increase, input_layout=input_layout)
        predicted = batch_predict(model=model, dataset=dataset, split="eval",
                                  keys=keys, output_format=output_format,
                                  max_error_fraction=max_error_fraction)
        with dsl.If(deploy != "none", name="deploy"):
            decision = gate(model, dataset, deploy, service_name,
                            deploy_options, serving_model_uri, gate_metric, gate_margin,
                            "eval").after(exported)
            with dsl.If(decision.outputs["Output"] == "deploy", name="gate-passed"):
                roll_out(model=model, dataset=dataset, target=deploy,
                         service_name=service_name, deploy_options=deploy_options,
                         precomputed_uri="", precomputed_key="", smoke_rows=smoke_rows,
                         eval_split="eval")
        return Outputs(model=model, tflite=exported.outputs["bundle"],
                       predictions=predicted.outputs["predictions"])

    return sized(training)  # every step's CPU, memory: pipelines/resources.py


training = make_training()


def check_arguments(arguments: Dict[str, Any]) -> None:
    """Refuse what a step would refuse without reading the data, before a run starts rather
    than after sharding or training: the group count, sharding options (column types and
    input format among them), quantization mode, export gate, output format and error limit
    by the components' own checks, then what train would
    refuse (strategy and cluster shape, launcher and its options, model, numbers, where the
    warm-start model is)."""
    from tfkfp.components.batch_predict.options import PredictOptions
    from tfkfp.components.export_tflite.options import ExportOptions
    from tfkfp.components.freeze_quantize.options import QuantizeOptions
    from tfkfp.components.shard_tfrecords.options import ShardOptions

    values = checks.with_defaults(training, arguments)
    check_group_count(values["file_groups"], "file_groups")
    checks.check_step(shard_tfrecords, ShardOptions, checks.fed(training, shard_tfrecords, values))
    checks.check_step(freeze_quantize, QuantizeOptions,
                      checks.fed(training, freeze_quantize, values))
    checks.check_step(export_tflite, ExportOptions, {
        **checks.fed(training, export_tflite, values), "quantized_dir": checks.QUANTIZED})
    checks.check_step(batch_predict, PredictOptions, checks.fed(training, batch_predict, values))
    if values["deploy"] != "none":
        from tfkfp.components.deploy_model.options import TARGETS

        if values["deploy"] not in TARGETS:
            raise ValueError(f"deploy {values['deploy']!r} is not one of none, "
                             f"{', '.join(TARGETS)}")
        check_deploy(values, values["deploy"])
    _check_train(values)
    if values["tune_trials"] > 0:
        _check_tune(values)


def _check_train(values: Dict[str, Any]) -> None:
    from tfkfp.components.common.training.config import check_warm_start_uri
    from tfkfp.components.train.core import check_options  # no TensorFlow: a typo costs 1 s

    check_warm_start_uri(values["warm_start_model_uri"], "warm_start_model_uri")
    check_options("", "", values["launcher"], values["launcher_options"],
                  **_checkable_train_settings(values))


def _checkable_train_settings(values: Dict[str, Any]) -> Dict[str, Any]:
    """The pipeline's train settings as this machine can check them: with a model_fn, which
    is imported in the step's image (it may hold code this one lacks), not model_name."""
    settings = checks.fed(training, train_settings, values)  # train's, as tune gets them
    if settings.pop("model_fn"):
        settings.pop("model_name")
    return settings


def _check_tune(values: Dict[str, Any]) -> None:
    """What tune refuses without the Dataset: its space, objective, budget and engine (its
    engine_options too), with the pipeline's train settings as its defaults."""
    from tfkfp.components.tune.options import TuneOptions

    given = checks.fed(training, tune, values)  # tune_trials as trials, ...
    checks.check_step(tune, TuneOptions,
                      {**given, "train_defaults": _checkable_train_settings(values)})
