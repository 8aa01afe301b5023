#!/bin/bash
# A small file system in the shape of InterCode's NL2Bash setup scripts.
rm -rf /testbed/
mkdir -p /testbed/dir1/sub /testbed/dir2 /testbed/empty
echo 'Hello, World!' > /testbed/dir1/a.txt
echo 'second file' > /testbed/dir1/sub/b.txt
echo -e '#!/bin/sh\necho hi' > /testbed/dir2/run.sh
chmod +x /testbed/dir2/run.sh
touch -m -t202305312359.59 /testbed/old.txt
echo '<html></html>' > /index.html
mkdir -p /backup
echo 'backup copy' > /backup/keep.txt
