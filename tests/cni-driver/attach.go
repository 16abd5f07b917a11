// SPDX-License-Identifier: Apache-2.0
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/types"
)

// driver holds what every attachment operation needs: libcni with its exec, and the options.
type driver struct {
	o    *options
	cni  *libcni.CNIConfig
	exec *driverExec
	rng  *rand.Rand
	atts []*attachment
}

func newDriver(o *options) (*driver, error) {
	atts, err := loadAttachments(o)
	if err != nil {
		return nil, err
	}
	if o.cacheDir == "" {
		// libcni's default is the host's /var/lib/cni: a test must never write there.
		return nil, badUsage("--cache-dir is required")
	}
	if o.id == "" {
		return nil, badUsage("--id is required")
	}
	if !o.netnsSet && o.cmd != "del" {
		return nil, badUsage("--netns is required")
	}
	seed := o.seed
	if !o.seedSet {
		seed = time.Now().UnixNano()
	}
	d := &driver{o: o, exec: &driverExec{}, rng: rand.New(rand.NewSource(seed)), atts: atts}
	d.cni = libcni.NewCNIConfigWithCacheDir(o.paths(), o.cacheDir, d.exec)
	return d, nil
}

func (d *driver) add(ctx context.Context, a *attachment, id string) (types.Result, error) {
	rt := d.o.runtimeConf(id, a.ifname)
	if a.single != nil {
		return d.cni.AddNetwork(ctx, a.single, rt)
	}
	return d.cni.AddNetworkList(ctx, a.list, rt)
}

func (d *driver) check(ctx context.Context, a *attachment, id string) error {
	rt := d.o.runtimeConf(id, a.ifname)
	if a.single != nil {
		return d.cni.CheckNetwork(ctx, a.single, rt)
	}
	return d.cni.CheckNetworkList(ctx, a.list, rt)
}

func (d *driver) del(ctx context.Context, a *attachment, id string) error {
	rt := d.o.runtimeConf(id, a.ifname)
	if a.single != nil {
		return d.cni.DelNetwork(ctx, a.single, rt)
	}
	return d.cni.DelNetworkList(ctx, a.list, rt)
}

// runOnce: add/check/del of every attachment (del in reverse order, as a runtime tears down).
func runOnce(o *options) error {
	d, err := newDriver(o)
	if err != nil {
		return err
	}
	ctx := context.Background()
	if o.killMaxUs > 0 {
		d.exec.arm(d.rng, o.killMaxUs, o.cmd)
	}
	var results []types.Result
	switch o.cmd {
	case "add":
		for _, a := range d.atts {
			r, err := d.add(ctx, a, o.id)
			if err != nil {
				return err
			}
			results = append(results, r)
		}
	case "check":
		for _, a := range d.atts {
			if err := d.check(ctx, a, o.id); err != nil {
				return err
			}
		}
	case "del":
		for i := len(d.atts) - 1; i >= 0; i-- {
			if err := d.del(ctx, d.atts[i], o.id); err != nil {
				return err
			}
		}
	}
	if len(results) == 0 {
		return nil
	}
	var out interface{} = results[0]
	if len(results) > 1 {
		out = results
	}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	fmt.Println(string(b))
	return nil
}

type stats struct {
	MedianMs float64 `json:"median_ms"`
	MeanMs   float64 `json:"mean_ms"`
	P90Ms    float64 `json:"p90_ms"`
	MinMs    float64 `json:"min_ms"`
	MaxMs    float64 `json:"max_ms"`
}

func summarize(d []time.Duration) stats {
	if len(d) == 0 {
		return stats{}
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	var sum time.Duration
	for _, x := range s {
		sum += x
	}
	ms := func(x time.Duration) float64 { return float64(x.Microseconds()) / 1000 }
	return stats{
		MedianMs: ms(s[len(s)/2]),
		MeanMs:   ms(sum / time.Duration(len(s))),
		P90Ms:    ms(s[len(s)*9/10]),
		MinMs:    ms(s[0]),
		MaxMs:    ms(s[len(s)-1]),
	}
}

// runLoop: --count cycles of ADD (every attachment, in order), optional CHECK, DEL (reverse),
// each cycle with its own container ID, timing each phase. The same loop drives every chain,
// so a benchmark compares plugins, not drivers. A failing cycle stops the loop after a DEL of
// that cycle's attachments (a runtime must DEL after a failed ADD), and exits 1.
func runLoop(o *options) error {
	if o.count < 1 {
		return badUsage("loop needs --count N")
	}
	d, err := newDriver(o)
	if err != nil {
		return err
	}
	ctx := context.Background()
	var adds, checks, dels, cycles []time.Duration
	var paused time.Duration
	start := time.Now()
	for i := 0; i < o.count; i++ {
		id := fmt.Sprintf("%s-%d", o.id, i)
		t0 := time.Now()
		for _, a := range d.atts {
			if _, err := d.add(ctx, a, id); err != nil {
				d.cleanup(ctx, id)
				return fmt.Errorf("cycle %d: add %s/%s: %w", i, a.name(), a.ifname, err)
			}
		}
		t1 := time.Now()
		if o.withCheck {
			for _, a := range d.atts {
				if err := d.check(ctx, a, id); err != nil {
					d.cleanup(ctx, id)
					return fmt.Errorf("cycle %d: check %s/%s: %w", i, a.name(), a.ifname, err)
				}
			}
		}
		t2 := time.Now()
		if o.pauseMaxUs > 0 {
			time.Sleep(time.Duration(d.rng.Intn(o.pauseMaxUs+1)) * time.Microsecond)
		}
		td := time.Now() // the DEL's start: the pause is not timed
		paused += td.Sub(t2)
		for j := len(d.atts) - 1; j >= 0; j-- {
			if err := d.del(ctx, d.atts[j], id); err != nil {
				return fmt.Errorf("cycle %d: del %s/%s: %w", i, d.atts[j].name(), d.atts[j].ifname, err)
			}
		}
		t3 := time.Now()
		adds = append(adds, t1.Sub(t0))
		if o.withCheck {
			checks = append(checks, t2.Sub(t1))
		}
		dels = append(dels, t3.Sub(td))
		cycles = append(cycles, t3.Sub(t0)-td.Sub(t1))
	}
	out := map[string]interface{}{
		"cycles":      o.count,
		"attachments": len(d.atts),
		"add":         summarize(adds),
		"del":         summarize(dels),
		"cycle":       summarize(cycles),
		"total_s":     time.Since(start).Seconds(),
	}
	if o.withCheck {
		out["check"] = summarize(checks)
	}
	if o.pauseMaxUs > 0 {
		out["paused_ms"] = float64(paused.Microseconds()) / 1000
	}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
	return nil
}

func (d *driver) cleanup(ctx context.Context, id string) {
	for j := len(d.atts) - 1; j >= 0; j-- {
		if err := d.del(ctx, d.atts[j], id); err != nil {
			fmt.Fprintf(os.Stderr, "cni-driver: cleanup DEL %s/%s: %v\n", d.atts[j].name(), d.atts[j].ifname, err)
		}
	}
}
