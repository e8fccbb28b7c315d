// The run's config keys: model.* (model/model_config.h), optim.* and the schedules (train/recipe.h), train.* and
// eval.* in one schema, and the GEMM precision that train.precision names.
//
//   ConfigSchema schema = train_schema();
//   Config cfg = schema.defaults();                         // + configs/*.toml + --set overrides
//   FRONTIER_RETURN_IF_ERROR(schema.load_toml("configs/tiny.toml", &cfg));
//   TrainSettings t = train_settings(cfg);                  // typed (train/settings.h)
//   Precision prec;
//   FRONTIER_RETURN_IF_ERROR(resolve_precision(t.precision, &prec));
#pragma once

#include <string>

#include "config/config.h"
#include "kernels/precision.h"

namespace frontier {

ConfigSchema train_schema();  // model.*, optim.*, train.*, eval.* keys
// train.precision -> the GEMM precision: "auto" is bf16 at the avx512bf16 tier, else fp32; an unknown name is an
// error. "bf16" below that tier warns (the reference bf16 kernel is slow).
Status resolve_precision(const std::string& name, Precision* out);

}  // namespace frontier
