#!/usr/bin/env bash
# `make e2e-kind`: Folio on a real Kubernetes cluster, with sandbox pods under
# gVisor. Not part of `make test` (these machines have no Docker); run it on
# a workstation with docker, kind, kubectl, helm, and gVisor's runsc plus
# containerd-shim-runsc-v1 installed on the host (see docs/e2e-kind.md).
#
# What it proves, end to end: the images build; the chart installs (CRD,
# migration hook, every Deployment ready); the operator turns a
# ConversionSandbox into a Job whose pod runs under the gvisor RuntimeClass;
# the pod fetches its document from the broker and returns 200-DPI pages;
# /v1/convert and /v1/ocr on a DOCX answer through the real stack.
#
# FOLIO_E2E_CLUSTER (default folio-e2e) names the kind cluster;
# FOLIO_E2E_KEEP=1 leaves it running afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
cluster="${FOLIO_E2E_CLUSTER:-folio-e2e}"
ns=folio
fail() { echo "e2e-kind: $*" >&2; exit 1; }
step() { echo "e2e-kind: $*" >&2; }

for tool in docker kind kubectl helm jq curl base64; do
  command -v "$tool" >/dev/null || fail "$tool is not installed (docs/e2e-kind.md lists what is needed)"
done
runsc_bin="$(command -v runsc)" || fail "runsc is not installed on the host"
shim_bin="$(command -v containerd-shim-runsc-v1)" || fail "containerd-shim-runsc-v1 is not installed on the host (gVisor's release ships it)"

work="$(mktemp -d)"
pf_pid=""
cleanup() {
  [ -n "$pf_pid" ] && kill "$pf_pid" 2>/dev/null || true
  rm -rf "$work"
  if [ "${FOLIO_E2E_KEEP:-0}" != 1 ]; then kind delete cluster --name "$cluster" >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT

if ! kind get clusters | grep -qx "$cluster"; then
  step "creating kind cluster $cluster with the runsc runtime"
  cat > "$work/kind.yaml" <<YAML
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
containerdConfigPatches:
  - |-
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runsc]
      runtime_type = "io.containerd.runsc.v1"
nodes:
  - role: control-plane
    extraMounts:
      - hostPath: $runsc_bin
        containerPath: /usr/local/bin/runsc
      - hostPath: $shim_bin
        containerPath: /usr/local/bin/containerd-shim-runsc-v1
YAML
  kind create cluster --name "$cluster" --config "$work/kind.yaml" --wait 120s
fi
kubectl config use-context "kind-$cluster" >/dev/null

step "building the images"
docker build -q -f deploy/docker/Dockerfile -t folio:e2e . >/dev/null
docker build -q -f deploy/docker/sandbox.Dockerfile -t folio-sandbox:e2e . >/dev/null
kind load docker-image folio:e2e folio-sandbox:e2e --name "$cluster"

step "Postgres and Redis (throwaway, from the dev overlay), and the credentials Secret"
kubectl create namespace "$ns" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
kubectl -n "$ns" apply -f deploy/kustomize/overlays/dev/postgres.yaml -f deploy/kustomize/overlays/dev/redis.yaml >/dev/null
kubectl -n "$ns" rollout status deploy/folio-postgres deploy/folio-redis --timeout=180s >/dev/null
kubectl -n "$ns" create secret generic folio \
  --from-literal=DATABASE_URL=postgres://folio:folio-dev@folio-postgres:5432/folio \
  --from-literal=REDIS_URL=redis://folio-redis:6379 \
  --dry-run=client -o yaml | kubectl apply -f - >/dev/null

step "helm install (RuntimeClass gvisor → handler runsc)"
helm upgrade --install folio deploy/helm/folio --namespace "$ns" --wait --timeout 10m \
  --set image.repository=folio --set image.tag=e2e \
  --set sandbox.image.repository=folio-sandbox --set sandbox.image.tag=e2e \
  --set runtimeClass.create=true --set runtimeClass.name=gvisor --set runtimeClass.handler=runsc >/dev/null

step "the first account"
key="$(kubectl -n "$ns" exec deploy/folio-edge -- folio admin account create --email e2e@example.test --name e2e --credits-cents 100 | jq -r .api_key.key)"
[ -n "$key" ] && [ "$key" != null ] || fail "no admin key from folio admin account create"

kubectl -n "$ns" port-forward svc/folio-edge 18080:80 >/dev/null 2>&1 &
pf_pid=$!
for _ in $(seq 50); do curl -sf http://127.0.0.1:18080/healthz >/dev/null && break; sleep 0.2; done
api() { curl -sS -H "Authorization: Bearer $key" -H "Content-Type: application/json" "$@"; }

step "POST /v1/convert (a DOCX, two pages) through a gVisor sandbox pod"
# Watch for the sandbox pod to check its runtime while the conversion runs.
( kubectl -n "$ns" get pods -l app.kubernetes.io/component=sandbox -w -o jsonpath='{.spec.runtimeClassName}{"\n"}' > "$work/runtime" 2>/dev/null & echo $! > "$work/watch.pid" )
printf '{"filename":"two-pages.docx","mimeType":"application/vnd.openxmlformats-officedocument.wordprocessingml.document","file":"%s"}' \
  "$(base64 -w0 test/fixtures/convert/two-pages.docx)" > "$work/convert.json"
api -d @"$work/convert.json" http://127.0.0.1:18080/v1/convert > "$work/convert.out"
kill "$(cat "$work/watch.pid")" 2>/dev/null || true
pages="$(jq -r .result.page_count "$work/convert.out")"
[ "$pages" = 2 ] || fail "expected 2 pages, got: $(head -c 400 "$work/convert.out")"
size="$(jq -r '.result.images[0] | "\(.width)x\(.height)"' "$work/convert.out")"
[ "$size" = 1654x2339 ] || fail "expected an A4 page at 200 DPI (1654x2339), got $size"
grep -qx gvisor "$work/runtime" || fail "the sandbox pod did not run with runtimeClassName gvisor (saw: $(sort -u "$work/runtime" | tr '\n' ' '))"

step "POST /v1/ocr on the same DOCX"
printf '{"model":"local/tesseract","base64":"%s"}' "$(base64 -w0 test/fixtures/convert/two-pages.docx)" > "$work/ocr.json"
api -d @"$work/ocr.json" http://127.0.0.1:18080/v1/ocr > "$work/ocr.out"
jq -e '.result.text | test("quick brown fox"; "i")' "$work/ocr.out" >/dev/null || fail "OCR text missing: $(head -c 400 "$work/ocr.out")"

step "no ConversionSandbox left behind"
for _ in $(seq 30); do
  left="$(kubectl -n "$ns" get conversionsandboxes -o name | wc -l)"
  [ "$left" = 0 ] && break
  sleep 1
done
[ "$left" = 0 ] || fail "$left ConversionSandbox(es) still present"

echo "e2e-kind: passed"
