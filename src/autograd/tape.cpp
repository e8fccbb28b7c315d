#include "autograd/tape.h"

#include <algorithm>

#include "util/status.h"

namespace frontier {

Var Tape::param(float* value, float* grad, std::vector<int64_t> shape) {
  auto n = std::make_unique<Node>();
  n->shape = std::move(shape);
  n->value = value;
  n->grad = grad;
  n->requires_grad = grad != nullptr;
  n->is_param = true;
  nodes_.push_back(std::move(n));
  return {static_cast<int>(nodes_.size() - 1)};
}

Var Tape::constant(const float* value, std::vector<int64_t> shape) {
  auto n = std::make_unique<Node>();
  n->shape = std::move(shape);
  n->own_value = PooledBuffer(n->numel(), /*zero=*/false);
  std::copy(value, value + n->numel(), n->own_value.data());
  n->value = n->own_value.data();
  nodes_.push_back(std::move(n));
  return {static_cast<int>(nodes_.size() - 1)};
}

Var Tape::make(std::vector<int64_t> shape, bool requires_grad) {
  auto n = std::make_unique<Node>();
  n->shape = std::move(shape);
  n->own_value = PooledBuffer(n->numel(), /*zero=*/false);
  n->value = n->own_value.data();
  n->requires_grad = requires_grad;
  nodes_.push_back(std::move(n));
  return {static_cast<int>(nodes_.size() - 1)};
}

Var Tape::view(Var x, std::vector<int64_t> shape) {
  auto n = std::make_unique<Node>();
  n->shape = std::move(shape);
  FRONTIER_CHECK(n->numel() == numel(x));
  n->value = value(x);
  n->requires_grad = requires_grad(x);
  if (n->requires_grad) n->grad = grad(x);  // gradients into the view land in x's buffer
  nodes_.push_back(std::move(n));
  return {static_cast<int>(nodes_.size() - 1)};
}

float* Tape::grad(Var v) {
  Node& n = *nodes_[v.id];
  if (!n.grad) {
    n.own_grad = PooledBuffer(n.numel());
    n.grad = n.own_grad.data();
  }
  return n.grad;
}

float* Tape::grad_or_fresh(Var v, bool* fresh) {
  Node& n = *nodes_[v.id];
  *fresh = !n.grad;
  if (!n.grad) {
    n.own_grad = PooledBuffer(n.numel(), /*zero=*/false);
    n.grad = n.own_grad.data();
  }
  return n.grad;
}

void Tape::backward(Var loss, float seed) { backward(loss, seed, nullptr); }

void Tape::backward(Var loss, float seed, const std::function<void(const Node&)>& param_final) {
  FRONTIER_CHECK(numel(loss) == 1);
  grad(loss)[0] += seed;
  for (int i = loss.id; i >= 0; i--) {
    Node& n = *nodes_[i];
    if (n.backward && n.grad) n.backward();
    if (n.is_param && param_final) param_final(n);
  }
  // Parameters recorded after the loss (none in a training step) take no part in it: final too.
  for (size_t i = loss.id + 1; param_final && i < nodes_.size(); i++)
    if (nodes_[i]->is_param) param_final(*nodes_[i]);
}

}  // namespace frontier
