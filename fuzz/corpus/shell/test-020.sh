python3 <<EOF
print(1)
EOF
