module github.com/opencontainers/runtime-tools

go 1.16

require (
	github.com/blang/semver v3.5.0+incompatible
	github.com/hashicorp/errwrap v1.0.0
	github.com/hashicorp/go-multierror v1.0.0
	github.com/mndrix/tap-go v0.0.0-20171203230836-629fa407e90b
	github.com/mrunalp/fileutils v0.5.0
	github.com/opencontainers/runtime-spec v1.0.2-0.20190207185410-29686dbc5559
	github.com/opencontainers/selinux v1.6.0
	github.com/satori/go.uuid v1.1.1-0.20170321230731-5bf94b69c6b6
	github.com/sirupsen/logrus v1.0.2-0.20170726183946-abee6f9b0679
	github.com/syndtr/gocapability v0.0.0-20170704070218-db04d3cc01c8
	github.com/urfave/cli v1.19.1
	github.com/xeipuuv/gojsonpointer v0.0.0-20180127040702-4e3ac2762d5f
	github.com/xeipuuv/gojsonreference v0.0.0-20150808065054-e02fc20de94c
	github.com/xeipuuv/gojsonschema v0.0.0-20170210233622-6b67b3fab74d
	golang.org/x/sys v0.0.0-20191115151921-52ab43148777
)
