package rls

import (
	"fmt"
	"sort"

	rlsconf "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// rateLimitConfigType is the type URL of the resources an xDS server
// sends: go-control-plane's resource.RateLimitConfigType.
const rateLimitConfigType = "type.googleapis.com/ratelimit.config.ratelimit.v3.RateLimitConfig"

// xdsConfig builds the Config of the RateLimitConfig resources of one xDS
// response, as the reference does (its ConfigXdsProtoToYaml): each
// resource is a file named by the resource's name, read by the same
// loader, with the same refusals. Resources are loaded in the order of
// their names (a snapshot's order is a map's), so that a merge or a
// refusal is the same on every delivery. A resource that is not a
// RateLimitConfig is refused.
func xdsConfig(resources []*anypb.Any, merge bool, bind func(*Rule) error) (*Config, error) {
	files := make([]*yamlFile, 0, len(resources))
	for i, res := range resources {
		pb := &rlsconf.RateLimitConfig{}
		if err := anypb.UnmarshalTo(res, pb, proto.UnmarshalOptions{}); err != nil {
			return nil, fmt.Errorf("resource %d (%s): %w", i, res.GetTypeUrl(), err)
		}
		files = append(files, xdsFile(pb))
	}
	sort.SliceStable(files, func(i, j int) bool { return files[i].name < files[j].name })
	return assemble(files, merge, bind)
}

// xdsFile is a resource as the file it stands for. The resource has no
// lines, and no fields for quota_mode, value_to_metric, share_threshold,
// algorithm or burst: its rules are the reference's fixed windows.
func xdsFile(pb *rlsconf.RateLimitConfig) *yamlFile {
	return &yamlFile{name: pb.Name, domain: pb.Domain, descriptors: xdsDescriptors(pb.Descriptors)}
}

func xdsDescriptors(pbs []*rlsconf.RateLimitDescriptor) []yamlDescriptor {
	ds := make([]yamlDescriptor, len(pbs))
	for i, d := range pbs {
		ds[i] = yamlDescriptor{
			key: d.Key, value: d.Value, rule: xdsRule(d.RateLimit), descriptors: xdsDescriptors(d.Descriptors),
			shadowMode: d.ShadowMode, detailedMetric: d.DetailedMetric,
		}
	}
	return ds
}

func xdsRule(p *rlsconf.RateLimitPolicy) *yamlRule {
	if p == nil {
		return nil
	}
	r := &yamlRule{
		requestsPerUnit: p.RequestsPerUnit, unlimited: p.Unlimited, name: p.Name,
		// The unit's name, as the reference reads it: UNKNOWN (0) is no
		// unit, and a number no name has is refused by that number.
		unit: p.Unit.String(),
	}
	for _, rp := range p.Replaces {
		r.replaces = append(r.replaces, rp.Name)
	}
	return r
}
