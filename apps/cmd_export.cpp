// Models out and in (export/model_dir.h, docs/formats.md "Model directory"): frontier export writes a checkpoint's
// model as safetensors + config.json + tokenizer with nanochat's names; frontier import turns such a directory back
// into a checkpoint (eval, sample, train --resume).
#include <cstdio>
#include <memory>

#include "commands.h"
#include "export/model_dir.h"

namespace frontier::cli {
namespace {

struct ExportArgs {
  ExportOptions exo;
  std::string dtype = "fp32";
};

int run_export(ExportArgs& a) {
  ExportOptions& exo = a.exo;
  exo.bf16 = a.dtype == "bf16";
  ExportResult er;
  Status s = export_model(exo, &er);
  if (!s.ok()) return fail(s);
  std::printf("exported %s: %s\n", exo.checkpoint.c_str(), er.shape.describe().c_str());
  std::printf("  %s (%zu tensors, %s, %.2f MB)\n  %s/config.json\n  %s/tokenizer/ (from %s)\n",
              er.safetensors_path.c_str(), er.n_tensors, a.dtype.c_str(), er.bytes / 1e6, exo.out_dir.c_str(),
              exo.out_dir.c_str(), er.tokenizer_from.c_str());
  return 0;
}

int run_import(const ImportOptions& imo) {
  ImportResult ir;
  Status s = import_model(imo, &ir);
  if (!s.ok()) return fail(s);
  std::printf("imported %s (%s): %s\n  %s\n", imo.dir.c_str(), ir.dtype.c_str(), ir.shape.describe().c_str(),
              ir.checkpoint.c_str());
  if (ir.resumable)
    std::printf("  train further: frontier train --resume %s   (budget: its config.toml)\n", imo.run_dir.c_str());
  else
    std::printf("  evaluate: frontier eval core --checkpoint %s; eval bpb needs --data DATASET (and --cross-data "
                "unless it is the data the model was trained on); to train further, import with --data\n",
                ir.checkpoint.c_str());
  return 0;
}

}  // namespace

// Both are dispatched before the mpirun check today, so under mpirun every rank runs them (under_mpirun).
void add_export_commands(CLI::App& app, Commands& cmds) {
  auto a = std::make_shared<ExportArgs>();
  ExportOptions& exo = a->exo;
  auto* ex = app.add_subcommand("export", "Write a checkpoint's model as OUT/model.safetensors (nanochat's parameter "
                                          "names), OUT/config.json (nanochat's GPTConfig) and OUT/tokenizer/; "
                                          "python/frontier_torch.py loads it in PyTorch");
  ex->add_option("--checkpoint", exo.checkpoint, "RUN_DIR/model.ckpt")->required();
  ex->add_option("--out", exo.out_dir, "Output directory")->required();
  ex->add_option("--dtype", a->dtype, "Weights as fp32 (exact) or bf16 (rounded to nearest even; half the size)")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
  ex->add_option("--data", exo.data, "Dataset whose tokenizer to copy (default: the run's train.data)");
  ex->add_flag("--force", exo.force, "Replace an --out directory that already holds files");
  cmds.push_back({ex, [a] { return run_export(*a); }, /*under_mpirun=*/true});

  auto imo = std::make_shared<ImportOptions>();
  auto* im = app.add_subcommand("import", "Turn a model directory (frontier export's layout) into RUN_DIR/model.ckpt "
                                          "+ config.toml for eval, sample and, with --data, train --resume");
  im->add_option("dir", imo->dir, "Model directory: config.json, model.safetensors, tokenizer/")->required();
  im->add_option("--out", imo->run_dir, "Run directory to write (config.toml, model.ckpt)")->required();
  im->add_option("--data", imo->data, "Prepared dataset with the model's tokenizer: the run's train.data, and a "
                                      "training state at step 0 so `frontier train --resume RUN_DIR` trains further");
  im->add_option("--set", imo->sets, "key=value for the run's config, repeatable (train.*, optim.*, eval.*)");
  im->add_flag("--force", imo->force, "Overwrite a run directory that already holds a run");
  cmds.push_back({im, [imo] { return run_import(*imo); }, /*under_mpirun=*/true});
}

}  // namespace frontier::cli
