//===- Objectives.cpp - Test objectives with known optima -----------------===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The four objectives of Converge.h. Least squares (random and Nesterov's)
/// have f* = 0 in closed form; logistic regression and the softmax LM are
/// strictly convex (L2 term) and get f* from Newton's method with a
/// certified gap ||grad||^2 / (2 lambda).
///
//===----------------------------------------------------------------------===//

#include "ConvergeInternal.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>

using namespace pipeopt;
using namespace pipeopt::converge;

converge::Objective::~Objective() = default;

void converge::Objective::gradient(const double *x, double *out) const {
  std::fill(out, out + dim_, 0.0);
  std::vector<double> g(dim_);
  for (int b = 0; b < numBatches_; ++b) {
    blockGradient(b, x, 0, dim_, g.data());
    for (int i = 0; i < dim_; ++i)
      out[i] += g[i];
  }
  for (int i = 0; i < dim_; ++i)
    out[i] /= numBatches_;
}

std::vector<double> converge::Objective::initialPoint() const {
  return std::vector<double>(dim_, 0.0);
}

llvm::StringRef converge::objectiveName(ObjectiveKind k) {
  switch (k) {
  case ObjectiveKind::Quadratic:
    return "quadratic";
  case ObjectiveKind::Nesterov:
    return "nesterov";
  case ObjectiveKind::Logistic:
    return "logistic";
  case ObjectiveKind::LM:
    return "lm";
  }
  return "?";
}

llvm::Expected<ObjectiveKind> converge::parseObjective(llvm::StringRef name) {
  for (ObjectiveKind k : {ObjectiveKind::Quadratic, ObjectiveKind::Nesterov,
                          ObjectiveKind::Logistic, ObjectiveKind::LM})
    if (name == objectiveName(k))
      return k;
  return detail::error("unknown objective '" + name.str() +
                       "' (expected quadratic, nesterov, logistic or lm)");
}

std::vector<int> converge::blockBounds(int dim, int stages) {
  std::vector<int> b(stages + 1, 0);
  int base = dim / stages, extra = dim % stages;
  for (int s = 0; s < stages; ++s)
    b[s + 1] = b[s] + base + (s < extra ? 1 : 0);
  return b;
}

namespace {
using detail::Rng;

//===----------------------------------------------------------------------===//
// Dense helpers
//===----------------------------------------------------------------------===//

/// Solves H x = r in place (r becomes x) for symmetric positive definite H
/// (n x n, row-major, overwritten by its Cholesky factor). False if H is not
/// positive definite.
bool choleskySolve(std::vector<double> &H, std::vector<double> &r, int n) {
  for (int j = 0; j < n; ++j) {
    double d = H[j * n + j];
    for (int k = 0; k < j; ++k)
      d -= H[j * n + k] * H[j * n + k];
    if (!(d > 0))
      return false;
    d = std::sqrt(d);
    H[j * n + j] = d;
    for (int i = j + 1; i < n; ++i) {
      double v = H[i * n + j];
      for (int k = 0; k < j; ++k)
        v -= H[i * n + k] * H[j * n + k];
      H[i * n + j] = v / d;
    }
  }
  for (int i = 0; i < n; ++i) { // L y = r
    double v = r[i];
    for (int k = 0; k < i; ++k)
      v -= H[i * n + k] * r[k];
    r[i] = v / H[i * n + i];
  }
  for (int i = n - 1; i >= 0; --i) { // L^T x = y
    double v = r[i];
    for (int k = i + 1; k < n; ++k)
      v -= H[k * n + i] * r[k];
    r[i] = v / H[i * n + i];
  }
  return true;
}

/// lambda_max(X^T X / n) of a row-major n x d matrix by power iteration.
double gramLambdaMax(const std::vector<double> &X, int n, int d) {
  std::vector<double> v(d, 1.0 / std::sqrt(static_cast<double>(d))), w(d), t(n);
  double lambda = 0;
  for (int it = 0; it < 300; ++it) {
    for (int i = 0; i < n; ++i) {
      double s = 0;
      for (int j = 0; j < d; ++j)
        s += X[static_cast<size_t>(i) * d + j] * v[j];
      t[i] = s;
    }
    std::fill(w.begin(), w.end(), 0.0);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < d; ++j)
        w[j] += X[static_cast<size_t>(i) * d + j] * t[i];
    double norm = 0;
    for (double x : w)
      norm += x * x;
    norm = std::sqrt(norm);
    if (norm == 0)
      return 0;
    lambda = norm / n;
    for (int j = 0; j < d; ++j)
      v[j] = w[j] / norm;
  }
  return lambda;
}

//===----------------------------------------------------------------------===//
// Least squares (random and Nesterov)
//===----------------------------------------------------------------------===//

class LeastSquares : public Objective {
public:
  using Objective::setNote;
  LeastSquares(ObjectiveKind k, int n, int d, int batch, std::vector<double> X,
               std::vector<double> y)
      : Objective(k), n_(n), batch_(batch), X_(std::move(X)), y_(std::move(y)) {
    dim_ = d;
    numBatches_ = n / batch;
    fStar_ = 0;
    smooth_ = gramLambdaMax(X_, n_, dim_);
  }
  double value(const double *x) const override {
    double s = 0;
    for (int i = 0; i < n_; ++i) {
      double r = residual(i, x);
      s += r * r;
    }
    return 0.5 * s / n_;
  }
  void blockGradient(int b, const double *z, int lo, int hi,
                     double *out) const override {
    std::fill(out, out + (hi - lo), 0.0);
    for (int i = b * batch_, e = i + batch_; i < e; ++i) {
      double r = residual(i, z);
      const double *row = &X_[static_cast<size_t>(i) * dim_];
      for (int j = lo; j < hi; ++j)
        out[j - lo] += r * row[j];
    }
    for (int j = 0; j < hi - lo; ++j)
      out[j] /= batch_;
  }

private:
  double residual(int i, const double *x) const {
    const double *row = &X_[static_cast<size_t>(i) * dim_];
    double s = -y_[i];
    for (int j = 0; j < dim_; ++j)
      s += row[j] * x[j];
    return s;
  }
  int n_, batch_;
  std::vector<double> X_, y_;
};

std::unique_ptr<Objective> makeRandomLeastSquares(int d, int n, int batch,
                                                  uint64_t seed) {
  Rng rng(seed * 0x9E37u + 11);
  std::vector<double> X(static_cast<size_t>(n) * d), w(d), y(n);
  for (double &x : X)
    x = rng.gaussian();
  for (double &x : w)
    x = rng.gaussian() / std::sqrt(static_cast<double>(d));
  for (int i = 0; i < n; ++i) {
    double s = 0;
    for (int j = 0; j < d; ++j)
      s += X[static_cast<size_t>(i) * d + j] * w[j];
    y[i] = s;
  }
  auto obj = std::make_unique<LeastSquares>(ObjectiveKind::Quadratic, n, d,
                                            batch, std::move(X), std::move(y));
  obj->setNote("f* = 0 exactly: y = X w* is consistent");
  return obj;
}

std::unique_ptr<Objective> makeNesterov(int d, int batch) {
  // Cholesky of the tridiagonal A = tridiag(-1, 2 + mu, -1): lower
  // bidiagonal L0 with diagonal a_i and subdiagonal b_i.
  const double mu = 0.01;
  std::vector<double> a(d), b(d, 0.0);
  a[0] = std::sqrt(2.0 + mu);
  for (int i = 1; i < d; ++i) {
    b[i] = -1.0 / a[i - 1];
    a[i] = std::sqrt(2.0 + mu - b[i] * b[i]);
  }
  // X = L0^T (row i: a_i at column i, b_{i+1} at column i + 1).
  std::vector<double> X(static_cast<size_t>(d) * d, 0.0), y(d, 0.0);
  for (int i = 0; i < d; ++i) {
    X[static_cast<size_t>(i) * d + i] = a[i];
    if (i + 1 < d)
      X[static_cast<size_t>(i) * d + i + 1] = b[i + 1];
  }
  // y = L0^{-1} e_1 by forward substitution.
  y[0] = 1.0 / a[0];
  for (int i = 1; i < d; ++i)
    y[i] = -b[i] * y[i - 1] / a[i];
  auto obj = std::make_unique<LeastSquares>(ObjectiveKind::Nesterov, d, d,
                                            batch, std::move(X), std::move(y));
  obj->setNote("f* = 0 exactly: X = L0^T is invertible (A = L0 L0^T, "
               "mu = 0.01)");
  return obj;
}

//===----------------------------------------------------------------------===//
// Newton's method for the strictly convex objectives
//===----------------------------------------------------------------------===//

/// Runs damped Newton from zero with the objective's own value / gradient
/// and a Hessian callback; returns f at the end and the final gradient
/// norm in *gnorm.
double newtonMinimum(const Objective &obj,
                     const std::function<void(const double *, double *)> &hess,
                     double *gnorm) {
  const int d = obj.dim();
  std::vector<double> x(d, 0.0), g(d), H(static_cast<size_t>(d) * d), p(d),
      xt(d);
  double f = obj.value(x.data());
  *gnorm = INFINITY;
  for (int it = 0; it < 100; ++it) {
    obj.gradient(x.data(), g.data());
    double gn = 0;
    for (double v : g)
      gn += v * v;
    *gnorm = std::sqrt(gn);
    if (*gnorm <= 1e-12)
      break;
    hess(x.data(), H.data());
    p = g;
    if (!choleskySolve(H, p, d))
      break;
    double t = 1;
    for (int ls = 0; ls < 60; ++ls, t *= 0.5) {
      for (int i = 0; i < d; ++i)
        xt[i] = x[i] - t * p[i];
      double ft = obj.value(xt.data());
      if (ft <= f)
        break;
    }
    double ft = obj.value(xt.data());
    if (!(ft <= f))
      break;
    x = xt;
    f = ft;
  }
  return f;
}

/// f* of an objective with L2 weight `l2` > 0 by newtonMinimum, and in
/// *note how close it is: the objective is l2-strongly convex, so
/// f - f* <= |grad f|^2 / (2 l2).
double newtonOptimum(const Objective &obj,
                     const std::function<void(const double *, double *)> &hess,
                     double l2, std::string *note) {
  double g = 0;
  double f = newtonMinimum(obj, hess, &g);
  *note = llvm::formatv("f* by Newton's method: gradient norm {0:e2} at "
                        "the end, gap <= {1:e2}",
                        g, g * g / (2 * l2))
              .str();
  return f;
}

//===----------------------------------------------------------------------===//
// Logistic regression
//===----------------------------------------------------------------------===//

double logistic(double m) { // log(1 + exp(-m)), stable
  return m > 0 ? std::log1p(std::exp(-m)) : -m + std::log1p(std::exp(m));
}
double sigmoid(double m) {
  return m >= 0 ? 1.0 / (1.0 + std::exp(-m))
                : std::exp(m) / (1.0 + std::exp(m));
}

class Logistic : public Objective {
public:
  Logistic(int n, int d, int batch, double l2, double featureScale,
           uint64_t seed)
      : Objective(ObjectiveKind::Logistic), n_(n), batch_(batch), l2_(l2) {
    dim_ = d;
    numBatches_ = n / batch;
    Rng rng(seed * 0x51u + 7);
    X_.resize(static_cast<size_t>(n) * d);
    const double scale = featureScale / std::sqrt(static_cast<double>(d));
    for (double &x : X_)
      x = scale * rng.gaussian();
    std::vector<double> w(d);
    for (double &x : w)
      x = rng.gaussian();
    y_.resize(n);
    for (int i = 0; i < n; ++i)
      y_[i] = rng.uniform() < sigmoid(dot(i, w.data())) ? 1.0 : -1.0;
    smooth_ = 0.25 * gramLambdaMax(X_, n, d) + l2;
  }
  double value(const double *x) const override {
    double s = 0;
    for (int i = 0; i < n_; ++i)
      s += logistic(y_[i] * dot(i, x));
    double r = 0;
    for (int j = 0; j < dim_; ++j)
      r += x[j] * x[j];
    return s / n_ + 0.5 * l2_ * r;
  }
  void blockGradient(int b, const double *z, int lo, int hi,
                     double *out) const override {
    std::fill(out, out + (hi - lo), 0.0);
    for (int i = b * batch_, e = i + batch_; i < e; ++i) {
      double c = -y_[i] * sigmoid(-y_[i] * dot(i, z));
      const double *row = &X_[static_cast<size_t>(i) * dim_];
      for (int j = lo; j < hi; ++j)
        out[j - lo] += c * row[j];
    }
    for (int j = lo; j < hi; ++j)
      out[j - lo] = out[j - lo] / batch_ + l2_ * z[j];
  }
  void hessian(const double *x, double *H) const {
    const int d = dim_;
    std::fill(H, H + static_cast<size_t>(d) * d, 0.0);
    for (int i = 0; i < n_; ++i) {
      double s = sigmoid(y_[i] * dot(i, x));
      double w = s * (1 - s) / n_;
      const double *row = &X_[static_cast<size_t>(i) * d];
      for (int a = 0; a < d; ++a)
        for (int b = 0; b <= a; ++b)
          H[a * d + b] += w * row[a] * row[b];
    }
    for (int a = 0; a < d; ++a) {
      H[a * d + a] += l2_;
      for (int b = 0; b < a; ++b)
        H[b * d + a] = H[a * d + b];
    }
  }
  void solve() {
    std::string note;
    fStar_ = newtonOptimum(
        *this, [this](const double *x, double *H) { hessian(x, H); }, l2_,
        &note);
    setNote(std::move(note));
  }

private:
  double dot(int i, const double *x) const {
    const double *row = &X_[static_cast<size_t>(i) * dim_];
    double s = 0;
    for (int j = 0; j < dim_; ++j)
      s += row[j] * x[j];
    return s;
  }
  int n_, batch_;
  double l2_;
  std::vector<double> X_, y_;
};

//===----------------------------------------------------------------------===//
// Softmax-regression language model on a synthetic token stream
//===----------------------------------------------------------------------===//

class SoftmaxLM : public Objective {
public:
  SoftmaxLM(int V, int positions, int batch, double l2, uint64_t seed)
      : Objective(ObjectiveKind::LM), V_(V), batch_(batch), l2_(l2) {
    dim_ = 2 * V * V + V;
    numBatches_ = positions / batch;
    n_ = numBatches_ * batch;
    // Ground-truth model of the same family, then a stream sampled from it.
    Rng rng(seed * 0x7Fu + 3);
    std::vector<double> truth(dim_);
    for (double &t : truth)
      t = 1.5 * rng.gaussian();
    std::vector<int> tok(n_ + 2);
    tok[0] = static_cast<int>(rng.below(V));
    tok[1] = static_cast<int>(rng.below(V));
    std::vector<double> p(V);
    for (int i = 2; i < n_ + 2; ++i) {
      probs(truth.data(), tok[i - 1], tok[i - 2], p.data());
      double u = rng.uniform(), c = 0;
      int v = V - 1;
      for (int k = 0; k < V; ++k) {
        c += p[k];
        if (u < c) {
          v = k;
          break;
        }
      }
      tok[i] = v;
    }
    prev1_.resize(n_);
    prev2_.resize(n_);
    target_.resize(n_);
    for (int i = 0; i < n_; ++i) {
      prev2_[i] = tok[i];
      prev1_[i] = tok[i + 1];
      target_[i] = tok[i + 2];
    }
    // Logit Hessian <= I/2, feature norm^2 = 3 (two one-hots and a bias).
    smooth_ = 1.5 + l2;
  }
  double value(const double *x) const override {
    std::vector<double> p(V_);
    double s = 0;
    for (int i = 0; i < n_; ++i) {
      probs(x, prev1_[i], prev2_[i], p.data());
      s -= std::log(std::max(p[target_[i]], 1e-300));
    }
    double r = 0;
    for (int j = 0; j < dim_; ++j)
      r += x[j] * x[j];
    return s / n_ + 0.5 * l2_ * r;
  }
  void blockGradient(int b, const double *z, int lo, int hi,
                     double *out) const override {
    std::fill(out, out + (hi - lo), 0.0);
    std::vector<double> p(V_);
    const int VV = V_ * V_;
    for (int i = b * batch_, e = i + batch_; i < e; ++i) {
      probs(z, prev1_[i], prev2_[i], p.data());
      p[target_[i]] -= 1.0;
      for (int v = 0; v < V_; ++v) {
        int ia = v * V_ + prev1_[i], ib = VV + v * V_ + prev2_[i],
            ic = 2 * VV + v;
        for (int idx : {ia, ib, ic})
          if (idx >= lo && idx < hi)
            out[idx - lo] += p[v];
      }
    }
    for (int j = lo; j < hi; ++j)
      out[j - lo] = out[j - lo] / batch_ + l2_ * z[j];
  }
  void hessian(const double *x, double *H) const {
    const int d = dim_, VV = V_ * V_;
    std::fill(H, H + static_cast<size_t>(d) * d, 0.0);
    std::vector<double> p(V_);
    for (int i = 0; i < n_; ++i) {
      probs(x, prev1_[i], prev2_[i], p.data());
      for (int u = 0; u < V_; ++u) {
        int iu[3] = {u * V_ + prev1_[i], VV + u * V_ + prev2_[i], 2 * VV + u};
        for (int v = 0; v < V_; ++v) {
          double w = ((u == v ? p[u] : 0.0) - p[u] * p[v]) / n_;
          int iv[3] = {v * V_ + prev1_[i], VV + v * V_ + prev2_[i], 2 * VV + v};
          for (int a : iu)
            for (int c : iv)
              H[static_cast<size_t>(a) * d + c] += w;
        }
      }
    }
    for (int a = 0; a < d; ++a)
      H[static_cast<size_t>(a) * d + a] += l2_;
  }
  void solve() {
    std::string note;
    fStar_ = newtonOptimum(
        *this, [this](const double *x, double *H) { hessian(x, H); }, l2_,
        &note);
    setNote(std::move(note));
  }

private:
  void probs(const double *x, int p1, int p2, double *p) const {
    const int VV = V_ * V_;
    double mx = -INFINITY;
    for (int v = 0; v < V_; ++v) {
      p[v] = x[v * V_ + p1] + x[VV + v * V_ + p2] + x[2 * VV + v];
      mx = std::max(mx, p[v]);
    }
    double s = 0;
    for (int v = 0; v < V_; ++v)
      s += (p[v] = std::exp(p[v] - mx));
    for (int v = 0; v < V_; ++v)
      p[v] /= s;
  }
  int V_, batch_, n_ = 0;
  double l2_;
  std::vector<int> prev1_, prev2_, target_;
};

} // namespace

void converge::Objective::setNote(std::string note) {
  fStarNote_ = std::move(note);
}

llvm::Expected<std::unique_ptr<Objective>>
converge::makeObjective(const ObjectiveParams &p) {
  auto inRange = [](int v, int lo, int hi) { return v >= lo && v <= hi; };
  const bool lm = p.kind == ObjectiveKind::LM;
  const bool nesterov = p.kind == ObjectiveKind::Nesterov;
  int d = p.dim ? p.dim : 64;
  int batch = p.batchSize ? p.batchSize : (lm ? 16 : 8);
  int n = p.samples ? p.samples : (lm ? 4096 : (nesterov ? d : 512));
  int V = p.vocab ? p.vocab : 16;
  double l2 = p.l2 >= 0 ? p.l2 : 1e-3;
  if (!inRange(d, 1, 4096))
    return detail::error(llvm::formatv("dimension must be in [1, 4096], got "
                                       "{0}",
                                       d)
                             .str());
  if (!inRange(n, 1, 1 << 20))
    return detail::error(llvm::formatv("samples must be in [1, 1048576], got "
                                       "{0}",
                                       n)
                             .str());
  if (!inRange(batch, 1, n))
    return detail::error(llvm::formatv("batch size must be in [1, samples = "
                                       "{0}], got {1}",
                                       n, batch)
                             .str());
  if (lm && !inRange(V, 2, 64))
    return detail::error(
        llvm::formatv("vocabulary must be in [2, 64], got {0}", V).str());
  if (!std::isfinite(l2))
    return detail::error("L2 weight must be finite");
  if (nesterov && p.samples && p.samples != d)
    return detail::error("nesterov: samples must equal the dimension (one "
                         "row of the Cholesky factor per coordinate)");
  switch (p.kind) {
  case ObjectiveKind::Quadratic:
    return makeRandomLeastSquares(d, n, batch, p.seed);
  case ObjectiveKind::Nesterov:
    return makeNesterov(d, batch);
  case ObjectiveKind::Logistic: {
    if (!(l2 > 0))
      return detail::error("logistic needs an L2 weight > 0 (f* must exist)");
    auto o = std::make_unique<Logistic>(
        n, d, batch, l2, p.featureScale > 0 ? p.featureScale : 4.0, p.seed);
    o->solve();
    return std::unique_ptr<Objective>(std::move(o));
  }
  case ObjectiveKind::LM: {
    if (!(l2 > 0))
      return detail::error("lm needs an L2 weight > 0 (f* must exist)");
    auto o = std::make_unique<SoftmaxLM>(V, n, batch, l2, p.seed);
    o->solve();
    return std::unique_ptr<Objective>(std::move(o));
  }
  }
  return detail::error("unknown objective");
}
