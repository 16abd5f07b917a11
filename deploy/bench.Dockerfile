# rdmak-bench: the default image of `rdmak bench k8s`: rdmak on Debian slim with perftest,
# the verbs providers and infiniband-diags, so one pod can test, diagnose and look around
# (rdmak bench, rdmak doctor --pod, ibstat, ibv_devinfo).
# tagged with rdmak's version (tools/version.sh), which `rdmak bench k8s` asks for:
#   v=$(tools/version.sh)
#   docker build -f deploy/Dockerfile -t rdmak:$v .
#   docker build -f deploy/bench.Dockerfile --build-arg RDMAK_IMAGE=rdmak:$v -t rdmak-bench:$v .
# Offline clusters (seed 002): tag and push it to the cluster's registry and give that registry
# to `rdmak bench k8s --registry REGISTRY`; the pods then pull REGISTRY/rdmak-bench:VERSION.
# Debian's perftest is built without CUDA: for --gpu use an image with a CUDA build of perftest
# (--image), e.g. the one seed 002 used, and keep rdmak in it.
# no default: the rdmak image of the same version, given as above
ARG RDMAK_IMAGE
FROM ${RDMAK_IMAGE}
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends \
        perftest ibverbs-providers ibverbs-utils infiniband-diags rdmacm-utils \
    && rm -rf /var/lib/apt/lists/*
RUN ln -s rdmak /usr/local/bin/rdmak-bench
# The pods of `rdmak bench k8s` run `sleep infinity` and get the test through kubectl exec.
ENTRYPOINT ["rdmak", "bench"]
CMD ["--help"]
