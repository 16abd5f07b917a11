// SPDX-License-Identifier: Apache-2.0
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/types"
	"github.com/containernetworking/cni/pkg/version"
)

// killedError: the operation was cut short by --kill-random-us, as a node losing the runtime or
// the plugin mid-ADD would. Not a plugin failure.
type killedError struct {
	afterUs int64
	command string
}

func (e *killedError) Error() string {
	return fmt.Sprintf("killed after %d us", e.afterUs)
}

// driverExec runs plugins as libcni's RawExec does (environment, stdin, the error object on
// stdout), but in their own process group, so that --kill-random-us can SIGKILL a plugin
// together with the IPAM plugin it delegated to, at any instant of the whole operation.
type driverExec struct {
	decoder version.PluginDecoder
	// set by arm(): the instant the operation is killed; zero when not killing
	deadline time.Time
	start    time.Time
	command  string
}

var _ invoke.Exec = (*driverExec)(nil)

func (e *driverExec) FindInPath(plugin string, paths []string) (string, error) {
	return invoke.FindInPath(plugin, paths)
}

func (e *driverExec) Decode(b []byte) (version.PluginInfo, error) {
	return e.decoder.Decode(b)
}

// arm schedules a kill at a uniformly random instant in [0, maxUs] us from now.
func (e *driverExec) arm(rng *rand.Rand, maxUs int, command string) {
	e.start = time.Now()
	e.deadline = e.start.Add(time.Duration(rng.Int63n(int64(maxUs)+1)) * time.Microsecond)
	e.command = command
}

func (e *driverExec) disarm() { e.deadline = time.Time{} }

func (e *driverExec) killed() error {
	return &killedError{afterUs: time.Since(e.start).Microseconds(), command: e.command}
}

func (e *driverExec) ExecPlugin(ctx context.Context, pluginPath string, stdinData []byte, environ []string) ([]byte, error) {
	armed := !e.deadline.IsZero()
	if armed && !time.Now().Before(e.deadline) {
		return nil, e.killed() // the deadline fell between two plugins of a chain
	}
	var stdout, stderr bytes.Buffer
	c := exec.CommandContext(ctx, pluginPath)
	c.Env = environ
	c.Stdin = bytes.NewReader(stdinData)
	c.Stdout = &stdout
	c.Stderr = &stderr
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		return nil, err
	}
	var timer *time.Timer
	if armed {
		pgid := c.Process.Pid
		timer = time.AfterFunc(time.Until(e.deadline), func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	}
	err := c.Wait()
	if timer != nil {
		timer.Stop()
		if ws, ok := c.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return nil, e.killed()
		}
	}
	if stderr.Len() > 0 {
		_, _ = stderr.WriteTo(os.Stderr)
	}
	if err != nil {
		return nil, pluginError(err, stdout.Bytes())
	}
	return stdout.Bytes(), nil
}

// pluginError turns a failed plugin's stdout into the CNI error object it printed, as libcni does.
func pluginError(err error, stdout []byte) error {
	e := &types.Error{}
	if len(stdout) == 0 {
		e.Code = 999
		e.Msg = fmt.Sprintf("netplugin failed with no error message: %v", err)
	} else if perr := json.Unmarshal(stdout, e); perr != nil {
		e.Code = 999
		e.Msg = fmt.Sprintf("netplugin failed but its stdout is not an error object %q: %v", string(stdout), perr)
	}
	return e
}
