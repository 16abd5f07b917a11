// SPDX-License-Identifier: Apache-2.0
package main

// ---------------------------------------------------------------------------------------------
// GC and STATUS, written by hand. libcni 1.1.2 (and the reference plugins 1.1.1) speak CNI up to
// 1.0.0 and have neither verb, so this file executes them as CNI spec 1.1 section 3 says a
// runtime does ("Garbage-collecting a network", "Deriving request configuration"):
//   - every plugin of the list, in order, with CNI_COMMAND=GC or STATUS and CNI_PATH, and no
//     attachment parameters (CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME, CNI_ARGS are unset);
//   - stdin: the plugin's config with "name" and "cniVersion" inserted and, for GC,
//     "cni.dev/valid-attachments": [{"containerID", "ifname"}, ...];
//   - GC goes on past a failing plugin and returns every error; STATUS stops at the first.
// A plugin whose VERSION does not list the requested cniVersion is skipped (said on stderr),
// because it would only answer "incompatible CNI versions": that is how the reference plugins
// are treated when they sit in a chain with rdmak-cni.
// ---------------------------------------------------------------------------------------------

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/types"
)

func verbEnviron(verb, cniPath string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CNI_") {
			env = append(env, kv)
		}
	}
	return append(env, "CNI_COMMAND="+verb, "CNI_PATH="+cniPath)
}

// supports asks the plugin's VERSION with the spec's environment (CNI_COMMAND alone, and
// CNI_PATH): not through libcni's GetVersionInfo, which also sets CNI_NETNS, CNI_IFNAME and
// CNI_PATH to "dummy" (the driver's `version` command keeps that path, as libcni runs it).
func supports(ctx context.Context, e *driverExec, pluginPath, want, cniPath string) (bool, []string, error) {
	stdin := []byte(fmt.Sprintf(`{"cniVersion":%q}`, want))
	out, err := e.ExecPlugin(ctx, pluginPath, stdin, verbEnviron("VERSION", cniPath))
	if err != nil {
		return false, nil, err
	}
	info, err := e.Decode(out)
	if err != nil {
		return false, nil, err
	}
	for _, v := range info.SupportedVersions() {
		if v == want {
			return true, info.SupportedVersions(), nil
		}
	}
	return false, info.SupportedVersions(), nil
}

// runVerb executes verb on every plugin of every --conf; it returns the errors met.
func runVerb(o *options, verb string, inject map[string]interface{}) []error {
	e := &driverExec{}
	ctx := context.Background()
	var errs []error
	atts, err := loadAttachments(o)
	if err != nil {
		return []error{err}
	}
	for _, a := range atts {
		for _, p := range a.list.Plugins {
			path, err := e.FindInPath(p.Network.Type, o.paths())
			if err == nil && len(o.paths()) == 0 {
				err = fmt.Errorf("no --cni-path (or CNI_PATH) to find %s in", p.Network.Type)
			}
			if err != nil {
				errs = append(errs, err)
				if verb == "STATUS" {
					return errs
				}
				continue
			}
			ok, vers, err := supports(ctx, e, path, o.gcVersion, o.cniPath)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: VERSION: %w", p.Network.Type, err))
				continue
			}
			if !ok {
				fmt.Fprintf(os.Stderr, "cni-driver: %s %s: skipped, %s supports %s, not %s\n",
					strings.ToLower(verb), a.name(), p.Network.Type, strings.Join(vers, " "), o.gcVersion)
				continue
			}
			vals := map[string]interface{}{"name": a.name(), "cniVersion": o.gcVersion}
			for k, v := range inject {
				vals[k] = v
			}
			conf, err := libcni.InjectConf(p, vals)
			if err != nil {
				return append(errs, err)
			}
			if _, err := e.ExecPlugin(ctx, path, conf.Bytes, verbEnviron(verb, o.cniPath)); err != nil {
				errs = append(errs, wrapPlugin(p.Network.Type, verb, err))
				if verb == "STATUS" {
					return errs
				}
			}
		}
	}
	return errs
}

// wrapPlugin keeps the plugin's error object (its code) and names the plugin in the details.
func wrapPlugin(typ, verb string, err error) error {
	if te, ok := err.(*types.Error); ok {
		return &types.Error{Code: te.Code, Msg: te.Msg, Details: joinNonEmpty(te.Details, fmt.Sprintf("plugin type=%q failed (%s)", typ, strings.ToLower(verb)))}
	}
	return err
}

func runGC(o *options) error {
	valid := []map[string]string{}
	for _, v := range o.valid {
		valid = append(valid, map[string]string{"containerID": v[0], "ifname": v[1]})
	}
	errs := runVerb(o, "GC", map[string]interface{}{"cni.dev/valid-attachments": valid})
	return firstOf(errs)
}

func runStatus(o *options) error {
	return firstOf(runVerb(o, "STATUS", nil))
}

// firstOf returns the first error, the others named in its details (GC reports them all).
func firstOf(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	if len(errs) == 1 {
		return errs[0]
	}
	var more []string
	for _, e := range errs[1:] {
		more = append(more, e.Error())
	}
	first := errs[0]
	te, ok := first.(*types.Error)
	if !ok {
		te = &types.Error{Code: 999, Msg: first.Error()}
	}
	return &types.Error{Code: te.Code, Msg: te.Msg, Details: joinNonEmpty(te.Details, "also: "+strings.Join(more, "; "))}
}
