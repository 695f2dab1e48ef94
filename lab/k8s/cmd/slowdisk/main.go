// slowdisk emulates an Azure network-attached disk for bench/etcd_disk.py: a FUSE passthrough (go-fuse's loopback
// file system) of BACKING at MOUNTPOINT that waits DELAY before every fsync and fdatasync it passes on, the round
// trip a remote disk adds to each durable write. Everything else is passed through unchanged. It serves until it is
// sent SIGTERM or SIGINT, then unmounts.
//
// Usage: slowdisk [-delay 2ms] BACKING MOUNTPOINT
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

var (
	delay  time.Duration
	syncs  atomic.Int64
	waited atomic.Int64
)

// slowNode is a loopback node whose fsync waits first; its children are slowNodes too.
type slowNode struct {
	*fs.LoopbackNode
}

func (n *slowNode) WrapChild(ctx context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	return &slowNode{ops.(*fs.LoopbackNode)}
}

func (n *slowNode) Fsync(ctx context.Context, f fs.FileHandle, flags uint32) syscall.Errno {
	time.Sleep(delay)
	syncs.Add(1)
	waited.Add(int64(delay))
	if fsyncer, ok := f.(fs.FileFsyncer); ok {
		return fsyncer.Fsync(ctx, flags)
	}
	return syscall.ENOTSUP
}

func main() {
	flag.DurationVar(&delay, "delay", 2*time.Millisecond, "added before every fsync/fdatasync")
	flag.Parse()
	if flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: slowdisk [-delay 2ms] BACKING MOUNTPOINT")
		os.Exit(2)
	}
	backing, mountpoint := flag.Arg(0), flag.Arg(1)
	var st syscall.Stat_t
	if err := syscall.Stat(backing, &st); err != nil {
		fmt.Fprintln(os.Stderr, "slowdisk:", err)
		os.Exit(1)
	}
	root := &fs.LoopbackRoot{Path: backing, Dev: uint64(st.Dev)}
	node := &slowNode{&fs.LoopbackNode{RootData: root}}
	root.RootNode = node
	server, err := fs.Mount(mountpoint, node, &fs.Options{
		MountOptions: fuse.MountOptions{
			AllowOther: true, DirectMountStrict: true, FsName: backing, Name: "slowdisk",
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "slowdisk: mount:", err)
		os.Exit(1)
	}
	fmt.Printf("slowdisk: %s on %s, %s before every fsync\n", backing, mountpoint, delay)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sig
		_ = server.Unmount()
	}()
	server.Wait()
	fmt.Printf("slowdisk: unmounted after %d fsyncs (%s waited)\n", syncs.Load(), time.Duration(waited.Load()))
}
