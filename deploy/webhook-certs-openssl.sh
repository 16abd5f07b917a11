#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The webhook's certificate without cert-manager: a CA of your own (kept in DIR and reused, so the
# MutatingWebhookConfiguration's caBundle stays the same across renewals) and a serving
# certificate for the Service's DNS names. Writes DIR/{ca.crt,ca.key,tls.crt,tls.key}; with
# --apply also creates/updates the Secret and sets caBundle with kubectl. Run it again before
# tls.crt expires: the webhook re-reads the Secret when kubelet updates the volume.
#   deploy/webhook-certs-openssl.sh [--dir DIR] [--namespace NS] [--service NAME] [--days N] [--apply]
set -euo pipefail
dir=./rdmak-webhook-certs ns=kube-system svc=rdmak-webhook days=365 apply=0
while [ $# -gt 0 ]; do
	case "$1" in
	--dir) dir=$2; shift 2 ;;
	--namespace) ns=$2; shift 2 ;;
	--service) svc=$2; shift 2 ;;
	--days) days=$2; shift 2 ;;
	--apply) apply=1; shift ;;
	-h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "webhook-certs-openssl.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
mkdir -p "$dir"
umask 077
if [ ! -s "$dir/ca.key" ]; then
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
		-keyout "$dir/ca.key" -out "$dir/ca.crt" -subj "/CN=$svc-ca" 2>/dev/null
	echo "new CA: $dir/ca.crt"
else
	echo "reusing the CA in $dir (caBundle unchanged)"
fi
printf 'subjectAltName=DNS:%s.%s.svc,DNS:%s.%s.svc.cluster.local\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment\n' \
	"$svc" "$ns" "$svc" "$ns" >"$dir/tls.ext"
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$dir/tls.key.new" -out "$dir/tls.csr" \
	-subj "/CN=$svc.$ns.svc" 2>/dev/null
openssl x509 -req -in "$dir/tls.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial -days "$days" \
	-extfile "$dir/tls.ext" -out "$dir/tls.crt.new" 2>/dev/null
mv "$dir/tls.key.new" "$dir/tls.key"
mv "$dir/tls.crt.new" "$dir/tls.crt"
rm -f "$dir/tls.csr"
echo "serving certificate for $svc.$ns.svc, $days days: $dir/tls.crt"
if [ "$apply" = 1 ]; then
	bundle=$(base64 -w0 <"$dir/ca.crt")
	kubectl -n "$ns" create secret tls "$svc-tls" --cert="$dir/tls.crt" --key="$dir/tls.key" \
		--dry-run=client -o yaml | kubectl apply -f -
	kubectl patch mutatingwebhookconfiguration "$svc" --type=json \
		-p "[{\"op\":\"add\",\"path\":\"/webhooks/0/clientConfig/caBundle\",\"value\":\"$bundle\"}]"
else
	echo "to install:"
	echo "  kubectl -n $ns create secret tls $svc-tls --cert=$dir/tls.crt --key=$dir/tls.key --dry-run=client -o yaml | kubectl apply -f -"
	echo "  kubectl patch mutatingwebhookconfiguration $svc --type=json -p '[{\"op\":\"add\",\"path\":\"/webhooks/0/clientConfig/caBundle\",\"value\":\"'\$(base64 -w0 <$dir/ca.crt)'\"}]'"
fi
