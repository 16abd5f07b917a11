// SPDX-License-Identifier: Apache-2.0
// cni-driver: drives CNI plugins through libcni, the library Multus and containerd use
// (Debian golang-github-appc-cni-dev 1.1.2), so that rdmak-cni/rdmak-ipam and the reference
// plugins are exercised by the same runtime code in tests and benchmarks.
//
//	cni-driver add|check|del  --conf FILE [--conf FILE...] --ifname IF [--ifname IF...] ...
//	cni-driver gc             --conf FILE [--valid ID/IF...]
//	cni-driver status         --conf FILE
//	cni-driver version        --type PLUGIN
//	cni-driver loop           --count N --conf FILE... --ifname IF... (N x ADD all, DEL all)
//
// Build (GOPATH mode, no network): GOPATH=/usr/share/gocode GO111MODULE=off go build.
//
// Exit codes: 0 success, 1 a plugin (or libcni) reported an error (printed on stdout as the CNI
// error object), 2 bad usage, 3 the plugin was killed on purpose (--kill-random-us).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/types"
)

const usage = `usage: cni-driver COMMAND [options]

Commands:
  add | check | del   one attachment per --conf/--ifname pair, through libcni
  gc                  CNI 1.1 GC of each --conf, by exec (libcni 1.1.2 predates it)
  status              CNI 1.1 STATUS of each --conf, by exec
  version             VERSION of plugin --type, through libcni
  loop                --count N times: ADD every attachment, then DEL them in reverse

Options:
  --conf FILE         network config (.conf) or list (.conflist, has "plugins"); repeatable
  --ifname IF         CNI_IFNAME, paired with --conf by position (one --ifname for all is refused
                      when there are several --conf)
  --netns PATH        CNI_NETNS (may be empty for del)
  --id ID             CNI_CONTAINERID (loop: ID-<cycle>)
  --cni-path DIRS     CNI_PATH, colon-separated (default $CNI_PATH)
  --cache-dir DIR     libcni's result cache (required for add/check/del/loop)
  --args K=V;K=V      CNI_ARGS
  --cap KEY=JSON      capability argument for runtimeConfig (deviceID, ips, mac, ...); a value that
                      is not JSON is taken as a string; repeatable; sent only to plugins whose
                      config declares the capability, as libcni does
  --valid ID/IF       gc: a still-valid attachment; repeatable
  --gc-version V      gc/status: cniVersion sent (default 1.1.0, the version defining them)
  --count N           loop: number of cycles
  --with-check        loop: CHECK every attachment between ADD and DEL
  --kill-random-us U  add/del: SIGKILL the plugin's process group after a random 0..U us
  --pause-random-us U loop: before each cycle's DEL, pause a random 0..U us, not timed (a DEL
                      then starts at no fixed point of the kernel's RCU cadence: DEL waits in
                      rcu_barrier, so back-to-back cycles lock onto it and each plugin's DEL
                      is measured at its own phase; docs/cni.md)
  --seed S            random seed for --kill-random-us and --pause-random-us (default: time)
`

type options struct {
	cmd        string
	confs      []string
	ifnames    []string
	netns      string
	netnsSet   bool
	id         string
	cniPath    string
	cacheDir   string
	args       [][2]string
	caps       map[string]interface{}
	valid      [][2]string
	gcVersion  string
	count      int
	withCheck  bool
	killMaxUs  int
	pauseMaxUs int
	seed       int64
	seedSet    bool
	pluginType string
}

// usageError is a command-line mistake: exit 2 with the message on stderr.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func badUsage(format string, a ...interface{}) error {
	return &usageError{fmt.Sprintf(format, a...)}
}

func parseArgs(argv []string) (*options, error) {
	if len(argv) < 1 {
		return nil, badUsage("no command")
	}
	o := &options{cmd: argv[0], caps: map[string]interface{}{}, gcVersion: "1.1.0", cniPath: os.Getenv("CNI_PATH")}
	rest := argv[1:]
	for i := 0; i < len(rest); i++ {
		flag := rest[i]
		if flag == "--with-check" {
			o.withCheck = true
			continue
		}
		if !strings.HasPrefix(flag, "--") {
			return nil, badUsage("unexpected argument %q", flag)
		}
		var val string
		if eq := strings.IndexByte(flag, '='); eq > 0 {
			flag, val = flag[:eq], flag[eq+1:]
		} else {
			if i+1 >= len(rest) {
				return nil, badUsage("%s needs a value", flag)
			}
			i++
			val = rest[i]
		}
		if err := o.set(flag, val); err != nil {
			return nil, err
		}
	}
	return o, nil
}

func (o *options) set(flag, val string) error {
	var err error
	switch flag {
	case "--conf":
		o.confs = append(o.confs, val)
	case "--ifname":
		o.ifnames = append(o.ifnames, val)
	case "--netns":
		o.netns, o.netnsSet = val, true
	case "--id":
		o.id = val
	case "--cni-path":
		o.cniPath = val
	case "--cache-dir":
		o.cacheDir = val
	case "--type":
		o.pluginType = val
	case "--gc-version":
		o.gcVersion = val
	case "--args":
		for _, kv := range strings.Split(val, ";") {
			if kv == "" {
				continue
			}
			p := strings.SplitN(kv, "=", 2)
			if len(p) != 2 {
				return badUsage("--args: %q is not K=V", kv)
			}
			o.args = append(o.args, [2]string{p[0], p[1]})
		}
	case "--cap":
		p := strings.SplitN(val, "=", 2)
		if len(p) != 2 || p[0] == "" {
			return badUsage("--cap: %q is not KEY=JSON", val)
		}
		var v interface{}
		if json.Unmarshal([]byte(p[1]), &v) != nil {
			v = p[1]
		}
		o.caps[p[0]] = v
	case "--valid":
		p := strings.SplitN(val, "/", 2)
		if len(p) != 2 {
			return badUsage("--valid: %q is not CONTAINERID/IFNAME", val)
		}
		o.valid = append(o.valid, [2]string{p[0], p[1]})
	case "--count":
		if o.count, err = strconv.Atoi(val); err != nil || o.count < 1 {
			return badUsage("--count: %q is not a positive number", val)
		}
	case "--kill-random-us":
		if o.killMaxUs, err = strconv.Atoi(val); err != nil || o.killMaxUs < 0 {
			return badUsage("--kill-random-us: %q is not a number", val)
		}
	case "--pause-random-us":
		if o.pauseMaxUs, err = strconv.Atoi(val); err != nil || o.pauseMaxUs < 0 {
			return badUsage("--pause-random-us: %q is not a number", val)
		}
	case "--seed":
		if o.seed, err = strconv.ParseInt(val, 10, 64); err != nil {
			return badUsage("--seed: %q is not a number", val)
		}
		o.seedSet = true
	default:
		return badUsage("unknown option %s", flag)
	}
	return nil
}

// attachment is one network on one interface: what a runtime calls with one (container, ifname).
type attachment struct {
	conf   string
	list   *libcni.NetworkConfigList
	single *libcni.NetworkConfig // set when the file is a single config, run as libcni runs one
	ifname string
}

func (a *attachment) name() string { return a.list.Name }

func loadAttachments(o *options) ([]*attachment, error) {
	if len(o.confs) == 0 {
		return nil, badUsage("--conf is required")
	}
	needIf := o.cmd != "gc" && o.cmd != "status"
	if needIf && len(o.ifnames) != len(o.confs) {
		return nil, badUsage("%d --conf but %d --ifname: give one --ifname per --conf", len(o.confs), len(o.ifnames))
	}
	var out []*attachment
	for i, path := range o.confs {
		a := &attachment{conf: path}
		if needIf {
			a.ifname = o.ifnames[i]
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil, badUsage("--conf: %v", err)
		}
		var probe map[string]json.RawMessage
		if err := json.Unmarshal(raw, &probe); err != nil {
			return nil, badUsage("--conf %s: not JSON: %v", path, err)
		}
		if _, ok := probe["plugins"]; ok {
			if a.list, err = libcni.ConfListFromBytes(raw); err != nil {
				return nil, badUsage("--conf %s: %v", path, err)
			}
		} else {
			if a.single, err = libcni.ConfFromBytes(raw); err != nil {
				return nil, badUsage("--conf %s: %v", path, err)
			}
			if a.list, err = libcni.ConfListFromConf(a.single); err != nil {
				return nil, badUsage("--conf %s: %v", path, err)
			}
		}
		out = append(out, a)
	}
	return out, nil
}

func (o *options) paths() []string {
	if o.cniPath == "" {
		return nil
	}
	return strings.Split(o.cniPath, ":")
}

func (o *options) runtimeConf(id, ifname string) *libcni.RuntimeConf {
	return &libcni.RuntimeConf{
		ContainerID:    id,
		NetNS:          o.netns,
		IfName:         ifname,
		Args:           o.args,
		CapabilityArgs: o.caps,
	}
}

// printError writes err as the CNI error object, the shape plugins and runtimes share.
func printError(err error) {
	var te *types.Error
	if !errors.As(err, &te) {
		te = &types.Error{Code: 999, Msg: err.Error()}
	} else if te.Msg != err.Error() {
		// libcni wraps the plugin's error ("plugin type=... failed (add): ..."): keep the
		// plugin's code and say where it came from.
		te = &types.Error{Code: te.Code, Msg: te.Msg, Details: joinNonEmpty(te.Details, err.Error())}
	}
	b, _ := json.Marshal(te)
	fmt.Println(string(b))
}

func joinNonEmpty(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func run(o *options) error {
	switch o.cmd {
	case "add", "check", "del":
		return runOnce(o)
	case "loop":
		return runLoop(o)
	case "gc":
		return runGC(o)
	case "status":
		return runStatus(o)
	case "version":
		if o.pluginType == "" {
			return badUsage("version needs --type")
		}
		cni := libcni.NewCNIConfig(o.paths(), nil)
		info, err := cni.GetVersionInfo(context.Background(), o.pluginType)
		if err != nil {
			return err
		}
		return json.NewEncoder(os.Stdout).Encode(map[string]interface{}{"supportedVersions": info.SupportedVersions()})
	case "help", "--help", "-h":
		fmt.Print(usage)
		return nil
	}
	return badUsage("unknown command %q", o.cmd)
}

func main() {
	o, err := parseArgs(os.Args[1:])
	if err == nil {
		err = run(o)
	}
	if err == nil {
		return
	}
	var ue *usageError
	var ke *killedError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(os.Stderr, "cni-driver: %s\n\n%s", ue.msg, usage)
		os.Exit(2)
	case errors.As(err, &ke):
		b, _ := json.Marshal(map[string]interface{}{"killed": true, "afterUs": ke.afterUs, "command": ke.command})
		fmt.Println(string(b))
		os.Exit(3)
	default:
		printError(err)
		os.Exit(1)
	}
}
